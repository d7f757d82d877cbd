"""Another server of the joint trajectory action (the SDK's own script, say): who it is, so
that the JTAS yields to it and two servers never drive the arm at once.

The master is asked which nodes publish the action's status / result / feedback topics
(what an action server advertises), and each is pinged (a node killed without unregistering
does not answer). A status on the action's topic from another node wakes the watch at once;
otherwise it looks every OTHER_SERVER_CHECK s.
"""
import threading
import xmlrpc.client

import rosgraph
import rospy
from actionlib_msgs.msg import GoalStatusArray

OTHER_SERVER_CHECK = 0.5        # wall s between looks for another server of the action
NODE_PING_TIMEOUT = 1.0         # s an alive node takes at most to answer the master API


class _PingTransport(xmlrpc.client.Transport):
    """XML-RPC with a timeout on its own connection (the process-wide default timeout would
    also apply to rospy's sockets)."""

    def make_connection(self, host):
        conn = super().make_connection(host)
        conn.timeout = NODE_PING_TIMEOUT
        return conn


class OtherServers:
    def __init__(self, action_ns, listening):
        """listening(): whether another node's status should wake the watch now."""
        self.action_ns = action_ns
        self.suspect = False                    # another node's status seen, not yet checked
        self._listening = listening
        self._master = rosgraph.Master(rospy.get_name())
        self._master_lock = threading.Lock()    # (one XML-RPC connection: one call at a time)
        self._look = threading.Event()          # look for other servers now
        rospy.Subscriber(action_ns + '/status', GoalStatusArray, self._on_status, queue_size=1)

    def find(self, unknown=()):
        """The other live nodes that advertise the action's server topics (sorted), or
        `unknown` when the master cannot be asked."""
        topics = {self.action_ns + suffix for suffix in ('/status', '/result', '/feedback')}
        me = rospy.get_name()
        try:
            with self._master_lock:
                pubs = self._master.getSystemState()[0]
        except Exception:   # noqa: BLE001 - master unreachable: keep the current decision
            return sorted(unknown)
        nodes = {n for topic, names in pubs if topic in topics for n in names if n != me}
        return sorted(n for n in nodes if self._alive(n))

    def _alive(self, node):
        try:
            with self._master_lock:
                uri = self._master.lookupNode(node)
            xmlrpc.client.ServerProxy(uri, transport=_PingTransport()).getPid(rospy.get_name())
            return True
        except Exception:   # noqa: BLE001 - unknown, unreachable or dead
            return False

    def _on_status(self, msg):
        header = getattr(msg, '_connection_header', None) or {}
        if self._listening() and header.get('callerid') not in (None, rospy.get_name()):
            self.suspect = True
            self._look.set()

    def watch(self, found, unknown):
        """Start the watch: found(others) with every look's answer (`unknown()`: the answer
        when the master cannot be asked)."""
        def run():
            while not rospy.is_shutdown():
                self._look.wait(OTHER_SERVER_CHECK)
                self._look.clear()
                found(self.find(unknown()))
        threading.Thread(target=run, name='jtas_others', daemon=True).start()
