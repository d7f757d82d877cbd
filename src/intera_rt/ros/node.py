"""What every robot node does at start-up beyond rospy.init_node: `init_node()`.

rospy trusts its peers and its master more than the robot can:

* **Publishers of another type.** A rospy subscriber takes whatever a publisher sends once
  the handshake has no 'error' field: a publisher that declares std_msgs/Float64 (or a wrong
  md5) on /robot/set_super_enable had its 8 bytes read as a Bool and disabled the robot.
  roscpp, which the real robot runs, refuses such a publisher. Here too: the connection is
  closed before any message is read, with an error log line naming the topic, the
  publisher, and both types and md5 sums (`refuse_mismatched_publishers`).
* **Malformed service requests.** rospy's service thread dies on a request it cannot
  deserialize: no reply, the connection left open, a traceback on stdout. Here the client
  gets an error reply, the connection is closed, and one log line names the service, the
  caller and the error (`answer_malformed_requests`).
* **A restarted master.** rospy registers a node's topics and services once; a master
  restarted at the same URI knows none of them, so no client can find the robot again.
  `MasterWatch` notices (the master's pid changes, or it stops answering and comes back),
  registers everything again and, in the node that owns them (realtime_loop), puts back the
  parameters the robot booted with that the new master lacks.

One place for all robot nodes: each node's main calls `init_node(name, ...)` instead of
rospy.init_node. The rospy patches are process-wide (every subscriber and service of the
process), installed once.
"""
import threading
import time

import rospy
import rospy.impl.registration as registration
from rospy.impl.tcpros_service import ServiceImpl
from rospy.topics import _SubscriberImpl

WATCH_PERIOD = 1.0          # s (wall clock) between two questions to the master
PARAM_REFRESH = 10.0        # s (wall clock) between two snapshots of the parameters to restore
_NOT_RESTORED = ('/run_id', '/roslaunch')     # per-launch bookkeeping, not the robot's

_installed = False


class PublisherRefused(Exception):
    """A publisher's handshake declares another message type or md5 than the subscriber's.
    Not a TransportInitError, so that rospy closes the connection for good instead of
    retrying it."""


def init_node(name, restore_params=False, **kwargs):
    """rospy.init_node(name, **kwargs) for a robot node, with the guards above installed
    and a MasterWatch started. `restore_params`: this node owns the robot's parameters and
    puts them back into a restarted master."""
    harden()
    rospy.init_node(name, **kwargs)
    MasterWatch(restore_params).start()


def harden():
    """Install the subscriber and service guards (process-wide, once)."""
    global _installed
    if _installed:
        return
    _installed = True
    refuse_mismatched_publishers()
    answer_malformed_requests()


# --- subscribers: the publisher's handshake must declare the subscriber's type -------------
def refuse_mismatched_publishers():
    add_connection = _SubscriberImpl.add_connection

    def checked_add_connection(self, conn):
        _check_handshake(self, conn)
        return add_connection(self, conn)
    _SubscriberImpl.add_connection = checked_add_connection


def _check_handshake(sub, conn):
    """Wrap `conn`'s header validation (run by rospy's connect thread once the publisher
    has answered, before any message is read) with the type and md5 check."""
    validate = getattr(conn, '_validate_header', None)
    if validate is None:                     # not a TCPROS connection: nothing to check
        return
    want_type, want_md5 = sub.data_class._type, sub.data_class._md5sum

    def validate_and_check(header):
        validate(header)                     # an 'error' field or missing fields: rospy's
        if want_md5 == '*':                  # an AnyMsg subscriber takes any type
            return
        md5, msg_type = header.get('md5sum'), header.get('type')
        if md5 == want_md5 and msg_type == want_type:
            return
        text = ('%s: refused publisher %s: it sends %s (md5 %s), this topic takes %s (md5 %s); '
                'connection closed' % (sub.resolved_name, header.get('callerid', conn.endpoint_id),
                                       msg_type, md5, want_type, want_md5))
        rospy.logerr(text)
        raise PublisherRefused(text)
    conn._validate_header = validate_and_check


# --- services: a request that cannot be read is answered with an error ----------------------
def answer_malformed_requests():
    handle = ServiceImpl.handle

    def guarded_handle(self, transport, header):
        try:
            handle(self, transport, header)
        except Exception as exc:  # noqa: BLE001 - rospy's own thread would die with it
            error = str(exc).split('\n')[0]
            rospy.logerr('%s: malformed request from %s (%s, md5 %s): %s; answered with an error '
                         'and closed', self.resolved_name, header.get('callerid', '?'),
                         self.service_class._type, header.get('md5sum', '?'), error)
            try:
                self._write_service_error(transport, 'malformed request: %s' % error)
            except Exception:  # noqa: BLE001 - the client may be gone already
                pass
            transport.close()
    ServiceImpl.handle = guarded_handle


# --- the master ---------------------------------------------------------------------------
class MasterWatch(threading.Thread):
    """Asks the master for its pid every WATCH_PERIOD s. When it has changed, or the master
    answers again after not answering, the master was restarted (or lost its state):
    register this node's publishers, subscribers and services again (rospy's own
    registration calls, which also reconnect subscribers to the publishers the master now
    lists) and, with `restore_params`, set the parameters this node saw at boot (refreshed
    every PARAM_REFRESH s) that the master lacks."""

    def __init__(self, restore_params=False, period=WATCH_PERIOD):
        super().__init__(name='master_watch', daemon=True)
        self.restore_params = restore_params
        self.period = period
        self.restarts = 0
        self._params = None
        self._params_at = -float('inf')

    def run(self):
        import rosgraph
        master = rosgraph.Master(rospy.get_name())
        pid, lost = None, False
        while not rospy.is_shutdown():
            try:
                now_pid = master.getPid()
            except Exception:  # noqa: BLE001 - down, restarting, unreachable
                if not lost and pid is not None:
                    rospy.logwarn('%s: the ROS master at %s does not answer; registering again '
                                  'when it is back', rospy.get_name(), rosgraph.get_master_uri())
                lost = True
                time.sleep(self.period)
                continue
            if pid is not None and (now_pid != pid or lost):
                self._reregister(master)
            elif self.restore_params and time.monotonic() - self._params_at > PARAM_REFRESH:
                self._snapshot_params(master)
            pid, lost = now_pid, False
            time.sleep(self.period)

    def _snapshot_params(self, master):
        try:
            self._params = master.getParam('/')
            self._params_at = time.monotonic()
        except Exception:  # noqa: BLE001 - keep the previous snapshot
            pass

    def _reregister(self, master):
        self.restarts += 1
        restored = []
        if self.restore_params and isinstance(self._params, dict):
            for key, value in self._params.items():
                name = '/' + key
                try:
                    if name not in _NOT_RESTORED and not master.hasParam(name):
                        master.setParam(name, value)
                        restored.append(name)
                except Exception:  # noqa: BLE001 - try the next one
                    pass
        reg_manager = next((l for l in registration.get_registration_listeners().listeners
                            if isinstance(l, registration.RegManager)), None)
        if reg_manager is None:
            rospy.logerr('%s: the ROS master restarted, but rospy has no registration manager '
                         'to register again with', rospy.get_name())
            return
        tm, sm = registration.get_topic_manager(), registration.get_service_manager()
        regs = ([(n, t, registration.Registration.PUB) for n, t in tm.get_publications()]
                + [(n, t, registration.Registration.SUB) for n, t in tm.get_subscriptions()]
                + [(n, u, registration.Registration.SRV) for n, u in sm.get_services()])
        for name, type_or_uri, kind in regs:
            reg_manager.reg_added(name, type_or_uri, kind)
        rospy.logwarn('%s: the ROS master restarted: registered %d topics and services again%s',
                      rospy.get_name(), len(regs),
                      ' and restored %d parameters' % len(restored) if restored else '')
