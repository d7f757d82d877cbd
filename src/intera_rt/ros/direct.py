"""Periodic topics written by the thread that publishes them, messages built in their wire
form, and throttled log lines.

Shared by the nodes that publish at the robot's state rate (realtime_loop's state topics,
robot_state_publisher's /tf)."""
import math
import os
import struct
import time

import rospy

from intera_rt.direct_writes import direct_publisher

SEND_BUFFER = 64 << 10                # bytes queued per subscriber at most
LOG_EVERY = 2.0                       # s between repeats of one throttled log line


def log_every():
    """LOG_EVERY, or the environment's INTERA_RT_LOG_EVERY (s; test/test_reliability_catalogue
    sets 0 to see every rejection of a fast run of bad inputs)."""
    try:
        value = float(os.environ.get('INTERA_RT_LOG_EVERY', LOG_EVERY))
    except ValueError:
        return LOG_EVERY
    return value if value >= 0 else LOG_EVERY


class Throttle:
    """Logs a given kind of complaint at most once per log_every() wall seconds."""

    def __init__(self):
        self._last = {}
        self._every = log_every()

    def __call__(self, log, key, text):
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) >= self._every:
            self._last[key] = now
            log(text)


class SerializedMessage:
    """A message of type `msg_class` already in its wire form; rospy publishes it as it is.
    For the messages sent 100 times a second, where building the message objects and
    serializing them costs more than packing the bytes directly."""
    __slots__ = ('_type', '_md5sum', 'data')
    _has_header = False                # rospy must not touch a header: it is in `data`

    def __init__(self, msg_class, data):
        self._type, self._md5sum, self.data = msg_class._type, msg_class._md5sum, data

    def serialize(self, buff):
        buff.write(self.data)


def raw_class(msg_class):
    """A message class that subscribes as `msg_class` (its type, md5 and definition in the
    handshake) but keeps each message in its wire form (`.data`), not deserialized: for a
    subscriber that reads only some of what a flood of messages brings (deserializing is
    the costly part)."""
    import genpy

    class Raw(genpy.Message):
        __slots__ = ('data',)
        _slot_types = ['bytes']
        _type, _md5sum, _full_text = msg_class._type, msg_class._md5sum, msg_class._full_text
        _has_header = False

        def __init__(self, *args, **kwargs):
            self.data = b''

        def deserialize(self, data):
            self.data = bytes(data)
            return self
    Raw.__name__ = 'Raw' + msg_class.__name__
    return Raw


def joint_command_key(data):
    """(mode, names in wire form) of a serialized intera_core_msgs/JointCommand, without
    deserializing it; None if it is too short to hold them."""
    try:
        k = 12                                               # header: seq, stamp
        (n,) = struct.unpack_from('<I', data, k)
        k += 4 + n                                           # frame_id
        mode, count = struct.unpack_from('<iI', data, k)
        k += 8
        start = k
        for _ in range(count):
            (n,) = struct.unpack_from('<I', data, k)
            k += 4 + n
        if k > len(data):
            return None
        return mode, data[start:k]
    except struct.error:
        return None


def wire_string(text):
    """A ROS string field: little-endian length, then UTF-8 bytes."""
    data = text.encode()
    return struct.pack('<I', len(data)) + data


def periodic_publisher(topic, msg_type, log, **kwargs):
    """A publisher for a topic sent at a fixed rate: written from the thread that publishes
    it (DirectWrites per subscriber, each socket's send buffer capped at SEND_BUFFER, a
    second or two of the topic); a subscriber that is not reading is logged through `log`,
    a Throttle."""
    def dropped(conn):
        log(rospy.logwarn, 'dropped:' + topic, '%s: subscriber %s is not reading; %d message(s) '
            'dropped for it' % (topic, conn.endpoint_id, conn.dropped))
    return direct_publisher(topic, msg_type, dropped, SEND_BUFFER, **kwargs)
