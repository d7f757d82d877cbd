"""A subscriber connection written by the thread that publishes, and a publisher made of
them. Outside boards/ and ros/: the Gazebo backend (boards) and the ROS adapters (ros) both
use it (rospy is imported only when a publisher is made)."""
import select
import socket
import warnings


class DirectWrites:
    """Wraps a rospy subscriber connection (a TCPROS transport) so that a message is written
    by the publishing thread itself: rospy's queued connections hand each message to a
    writer thread per subscriber, a thread wake-up per message and subscriber, which on this
    kind of machine costs more than the message and adds its latency. A message the socket
    cannot take at once is dropped for that subscriber, as a full queue drops its oldest:
    a client that stops reading never holds the publisher.

    Args:
        connection: the transport rospy's publisher would add.
        on_drop: called with this object after each dropped message (`dropped` counts
            them; the wrapped transport's attributes, e.g. endpoint_id, read through it).
        send_buffer: caps the socket's send buffer (bytes): left to autotune it grows to
            megabytes, minutes of a topic a stalled client never reads. None: as it is.
    """

    def __init__(self, connection, on_drop, send_buffer=None):
        if send_buffer is not None:
            connection.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        self._connection = connection
        self._on_drop = on_drop
        self._writable = select.poll()
        self._writable.register(connection.fileno(), select.POLLOUT)
        self.dropped = 0

    def __getattr__(self, name):           # everything else is the wrapped transport's
        if name.startswith('__'):
            raise AttributeError(name)
        return getattr(self._connection, name)

    def write_data(self, data):
        if not self._writable.poll(0):
            self.dropped += 1
            self._on_drop(self)
            return True
        return self._connection.write_data(data)


def direct_publisher(topic, msg_type, on_drop, send_buffer=None, **kwargs):
    """A rospy publisher whose subscriber connections are DirectWrites (on_drop and
    send_buffer as there; kwargs: rospy.Publisher's, e.g. tcp_nodelay)."""
    import rospy
    with warnings.catch_warnings():          # rospy warns about queue_size=None
        warnings.simplefilter('ignore', SyntaxWarning)
        publisher = rospy.Publisher(topic, msg_type, queue_size=None, **kwargs)
    add = publisher.impl.add_connection
    publisher.impl.add_connection = lambda c: add(DirectWrites(c, on_drop, send_buffer))
    return publisher
