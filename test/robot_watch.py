"""What the reliability tests watch while they misuse the robot, and the raw TCPROS tools
they misuse it with (test_reliability_catalogue.py, test_faults.py, test_master_restart.py).

  Rosout       every /rosout line, searchable from a mark on
  NodeWatch    the robot's nodes by name: their pids (from the nodes themselves, over
               XML-RPC), alive or restarted since, and the realtime core process
  ArmWatch     the largest excursion of right_j0..6 from a reference since it was set
  FakePublisher  a TCPROS publisher that declares any type and md5 and sends any bytes
  tcpros_*     handshake headers, a raw connection to a topic or service port
"""
import os
import socket
import struct
import threading
import time
import xmlrpc.client
from xmlrpc.server import SimpleXMLRPCServer

import numpy as np

from contract import ARM
from intera_rt.tooling.robot_process import IK_NODE, JTAS_NODE, ROBOT_NODES, TF_NODE  # noqa: F401 (tests)



class Rosout:
    """Every /rosout line: (node, level, text). `mark()` → an index; `find(pattern, since,
    node)` the first later line whose text matches (re.search), `wait(...)` for one."""

    def __init__(self):
        import rospy
        from rosgraph_msgs.msg import Log
        self.lines = []
        self._cond = threading.Condition()
        self._sub = rospy.Subscriber('/rosout', Log, self._keep, queue_size=5000)

    def _keep(self, msg):
        with self._cond:
            self.lines.append((msg.name, msg.level, msg.msg))
            self._cond.notify_all()

    def mark(self):
        with self._cond:
            return len(self.lines)

    def find(self, pattern, since=0, node=None):
        import re
        rx = re.compile(pattern)
        with self._cond:
            for name, level, text in self.lines[since:]:
                if (node is None or name == node) and rx.search(text):
                    return text
        return None

    def wait(self, pattern, since=0, node=None, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            text = self.find(pattern, since, node)
            if text is not None:
                return text
            left = deadline - time.monotonic()
            if left <= 0:
                with self._cond:
                    recent = [l for l in self.lines[since:] if node is None or l[0] == node][-8:]
                raise AssertionError('no /rosout line%s matching %r within %.0f s; lines since: %s'
                                     % (' from ' + node if node else '', pattern, timeout, recent))
            with self._cond:
                self._cond.wait(min(left, 0.1))

    def since(self, mark, node=None):
        with self._cond:
            return [l for l in self.lines[mark:] if node is None or l[0] == node]

    def close(self):
        self._sub.unregister()


def master():
    import rosgraph
    return rosgraph.Master('/intera_rt_test_watch')


def node_pid(name, timeout=2.0, uri=None):
    """The pid a node reports over its XML-RPC API (None: not registered or not answering);
    `uri`: its API, if known (else the master's answer)."""
    try:
        uri = uri or master().lookupNode(name)
        proxy = xmlrpc.client.ServerProxy(uri)
        socket.setdefaulttimeout(timeout)
        try:
            code, _msg, pid = proxy.getPid('/intera_rt_test_watch')
        finally:
            socket.setdefaulttimeout(None)
        return pid if code == 1 else None
    except Exception:  # noqa: BLE001 - not registered, refused, timed out
        return None


def process_alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
    except (OSError, IndexError):
        return False


def children(pid):
    out = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    if int(f.read().rsplit(')', 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def listening_addresses(pid):
    """(address, port) of every TCP socket process `pid` listens on (IPv4 and IPv6)."""
    inodes = set()
    try:
        for fd in os.listdir('/proc/%d/fd' % pid):
            try:
                target = os.readlink('/proc/%d/fd/%s' % (pid, fd))
            except OSError:
                continue
            if target.startswith('socket:['):
                inodes.add(target[8:-1])
    except OSError:
        return []
    out = []
    for table, v6 in (('/proc/net/tcp', False), ('/proc/net/tcp6', True)):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] != '0A' or cols[9] not in inodes:          # 0A: LISTEN
                continue
            hex_addr, hex_port = cols[1].split(':')
            raw = bytes.fromhex(hex_addr)
            if v6:
                # four little-endian 32-bit words
                raw = b''.join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                addr = socket.inet_ntop(socket.AF_INET6, raw)
                if addr.startswith('::ffff:'):
                    addr = addr[7:]
            else:
                addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
            out.append((addr, int(hex_port, 16)))
    return out


class NodeWatch:
    """The robot's nodes and their pids at creation; `check()` raises AssertionError naming
    every node that died, stopped answering or was restarted (a new pid) since, and the
    realtime core process (realtime_loop's child) if it is gone."""

    def __init__(self, names=ROBOT_NODES):
        self.pids, self.uris = {}, {}
        for name in names:
            self.uris[name] = master().lookupNode(name)
            pid = node_pid(name, uri=self.uris[name])
            assert pid, 'robot node %s is not running' % name
            self.pids[name] = pid
        self.core = self._core_pid()
        assert self.core, 'no realtime core process under realtime_loop'

    def _core_pid(self):
        for pid in children(self.pids['/realtime_loop']):
            try:
                with open('/proc/%d/cmdline' % pid, 'rb') as f:
                    if b'intera_rt.realtime.process' in f.read():
                        return pid
            except OSError:
                pass
        return None

    def problems(self):
        out = []
        for name, pid in self.pids.items():
            if not process_alive(pid):
                now = node_pid(name)
                out.append('%s (pid %d) died%s' % (name, pid, ', restarted as %s' % now if now else ''))
                continue
            now = node_pid(name, uri=self.uris[name])
            if now != pid:
                out.append('%s (pid %d) does not answer (%s)' % (name, pid, now))
        if not process_alive(self.core):
            out.append('the realtime core (pid %d) died' % self.core)
        return out

    def check(self, what=''):
        bad = self.problems()
        assert not bad, '%s: %s' % (what or 'robot nodes', '; '.join(bad))


class ArmWatch:
    """right_j0..6 from /robot/joint_states: `reset()` takes the latest angles as the
    reference, `excursion()` the largest |q - reference| of any joint in any message since,
    `age()` the wall seconds since the latest message."""

    def __init__(self):
        import rospy
        from sensor_msgs.msg import JointState
        self._lock = threading.Lock()
        self.q = None
        self._ref = None
        self._max = 0.0
        self._joint = None
        self._at = None
        self._sub = rospy.Subscriber('/robot/joint_states', JointState, self._cb, queue_size=10)
        deadline = time.monotonic() + 10.0
        while self.q is None:
            assert time.monotonic() < deadline, 'no /robot/joint_states'
            time.sleep(0.02)

    def _cb(self, msg):
        q = np.array([msg.position[msg.name.index(n)] for n in ARM])
        with self._lock:
            self.q, self._at = q, time.monotonic()
            if self._ref is not None:
                d = np.abs(q - self._ref)
                j = int(np.argmax(d))
                if d[j] > self._max:
                    self._max, self._joint = float(d[j]), ARM[j]

    def reset(self):
        with self._lock:
            self._ref, self._max, self._joint = self.q.copy(), 0.0, None
            return self._ref.copy()

    def fresh(self, timeout=5.0):
        """Wait for a message that arrives after this call; its angles."""
        start = time.monotonic()
        deadline = start + timeout
        while True:
            with self._lock:
                if self._at is not None and self._at > start:
                    return self.q.copy()
            assert time.monotonic() < deadline, 'no fresh /robot/joint_states'
            time.sleep(0.005)

    def excursion(self):
        with self._lock:
            return self._max, self._joint

    def age(self):
        with self._lock:
            return time.monotonic() - self._at

    def close(self):
        self._sub.unregister()


# --- raw TCPROS --------------------------------------------------------------------------------
def tcpros_header(fields):
    """A TCPROS connection header: each 'key=value' length-prefixed, the whole too."""
    pairs = [('%s=%s' % (k, v)).encode() for k, v in fields.items()]
    body = b''.join(struct.pack('<I', len(kv)) + kv for kv in pairs)
    return struct.pack('<I', len(body)) + body


def read_header(sock, timeout=5.0):
    """A TCPROS header from `sock` as a dict ({} if the peer closed first)."""
    sock.settimeout(timeout)
    data = _recv_exact(sock, 4)
    if data is None:
        return {}
    (n,) = struct.unpack('<I', data)
    body = _recv_exact(sock, n) or b''
    out, k = {}, 0
    while k + 4 <= len(body):
        (m,) = struct.unpack('<I', body[k:k + 4])
        key, _, value = body[k + 4:k + 4 + m].decode('utf-8', 'replace').partition('=')
        out[key] = value
        k += 4 + m
    return out


def _recv_exact(sock, n):
    data = b''
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except (socket.timeout, ConnectionError):
            return None
        if not chunk:
            return None
        data += chunk
    return data


def closed_by_peer(sock, timeout=5.0):
    """True when the peer closes `sock` within `timeout` s (bytes read meanwhile are
    discarded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except ConnectionError:
            return True
    return False


def topic_port(node, topic):
    """(host, port) of `node`'s TCPROS server, as it answers requestTopic for `topic`."""
    uri = master().lookupNode(node)
    code, msg, proto = xmlrpc.client.ServerProxy(uri).requestTopic(
        '/intera_rt_test_watch', topic, [['TCPROS']])
    assert code == 1, msg
    return proto[1], proto[2]


def service_port(service):
    uri = master().lookupService(service)
    host, port = uri[len('rosrpc://'):].rsplit(':', 1)
    return host, int(port)


def connect(addr, timeout=5.0):
    return socket.create_connection(addr, timeout=timeout)


class FakePublisher:
    """A publisher of `topic` that declares `msg_type` / `md5` in its handshake (whatever
    the topic's real type is) and sends `payload` (raw message bytes) to every subscriber
    that connects. Registered with the master under its own caller id, so that the
    topic's subscribers connect to it. `connections`: per subscriber, its header and
    whether it closed the connection afterwards (`refused`)."""

    def __init__(self, topic, msg_type, md5, payload):
        self.topic, self.msg_type, self.md5, self.payload = topic, msg_type, md5, payload
        self.caller_id = '/fake_publisher_%d_%d' % (os.getpid(), id(self) % 100000)
        self.connections = []
        self._tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._tcp.bind(('127.0.0.1', 0))
        self._tcp.listen(8)
        self._rpc = SimpleXMLRPCServer(('127.0.0.1', 0), logRequests=False, allow_none=True)
        self._rpc.register_function(self._request_topic, 'requestTopic')
        self._rpc.register_function(lambda caller: [1, '', os.getpid()], 'getPid')
        self._rpc.register_function(lambda caller, topic, pubs: [1, '', 0], 'publisherUpdate')
        self._rpc.register_function(lambda caller: [1, '', []], 'getBusInfo')
        self._rpc.register_function(lambda caller: [1, '', []], 'getSubscriptions')
        self._rpc.register_function(lambda caller: [1, '', [[topic, msg_type]]], 'getPublications')
        self._rpc.register_function(lambda caller, msg='': [1, '', 0], 'shutdown')
        self.uri = 'http://127.0.0.1:%d/' % self._rpc.server_address[1]
        self._done = False
        threading.Thread(target=self._rpc.serve_forever, daemon=True).start()
        threading.Thread(target=self._accept, daemon=True).start()
        xmlrpc.client.ServerProxy(master().master_uri).registerPublisher(
            self.caller_id, topic, msg_type, self.uri)

    def _request_topic(self, caller, topic, protocols):
        return [1, 'ready', ['TCPROS', '127.0.0.1', self._tcp.getsockname()[1]]]

    def _accept(self):
        while not self._done:
            try:
                sock, _ = self._tcp.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _record(self, sock):
        """Record the subscriber's header in `connections`; returns the record."""
        entry = {'header': read_header(sock), 'refused': None}
        self.connections.append(entry)
        return entry

    def _answer(self, sock):
        """This publisher's header: its declared type and md5."""
        sock.sendall(tcpros_header({'callerid': self.caller_id, 'topic': self.topic,
                                    'type': self.msg_type, 'md5sum': self.md5,
                                    'latching': '0', 'message_definition': ''}))

    def _serve(self, sock):
        entry = self._record(sock)
        try:
            self._answer(sock)
            sock.sendall(struct.pack('<I', len(self.payload)) + self.payload)
        except OSError:
            entry['refused'] = True
            return
        entry['refused'] = closed_by_peer(sock, 5.0)
        sock.close()

    def close(self):
        self._done = True
        try:
            xmlrpc.client.ServerProxy(master().master_uri).unregisterPublisher(
                self.caller_id, self.topic, self.uri)
        except Exception:  # noqa: BLE001
            pass
        self._rpc.shutdown()
        self._rpc.server_close()
        self._tcp.close()


class Flooder(FakePublisher):
    """A publisher of `topic` with the topic's true type (`msg_class`) that streams
    `messages` (cycled) at `rate` Hz for `duration` s to every subscriber that connects,
    in batches every millisecond: a client far faster than any the robot expects.
    `sent` counts the messages written, `done` is set when the stream ends."""

    def __init__(self, topic, msg_class, messages, rate, duration):
        from io import BytesIO
        frames = []
        for msg in messages:
            buff = BytesIO()
            msg.serialize(buff)
            frames.append(struct.pack('<I', buff.tell()) + buff.getvalue())
        self._frames, self.rate, self.duration = frames, rate, duration
        self.sent = 0
        self.done = threading.Event()
        self.started = threading.Event()
        super().__init__(topic, msg_class._type, msg_class._md5sum, b'')

    def _serve(self, sock):
        entry = self._record(sock)
        try:
            self._answer(sock)
            self.started.set()
            n_frames = len(self._frames)
            t0 = time.monotonic()
            while not self._done:
                elapsed = time.monotonic() - t0
                if elapsed >= self.duration:
                    break
                due = int(elapsed * self.rate) - self.sent
                if due > 0:
                    batch = b''.join(self._frames[(self.sent + i) % n_frames] for i in range(due))
                    sock.sendall(batch)
                    self.sent += due
                time.sleep(0.001)
        except OSError:
            entry['refused'] = True
        finally:
            self.done.set()
            sock.close()
