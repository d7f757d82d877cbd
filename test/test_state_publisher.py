"""robot_state_publisher (intera_rt's own), as a tf client sees it: the fixed joints latched
on /tf_static, every movable joint on /tf at each /robot/joint_states stamp, and a bad
joint state (sent to a second instance with its own topics: tests never publish the robot's
own topics) logged and ignored."""
import threading

import numpy as np
import pytest

from rosharness import latest, wait_for
from robot_watch import TF_NODE

NODE = TF_NODE                 # on the robot, robot_state_publisher runs in this node
MOVABLE = {'head_pan'} | {'right_j%d' % i for i in range(7)}


@pytest.fixture(scope='module')
def frames(robot):
    import rospy
    from intera_rt.model.joint_frames import JointFrames
    return JointFrames.from_xml(rospy.get_param('/robot_description'))


class Recorder:
    """Every message of a topic while open."""

    def __init__(self, topic, msg_type):
        import rospy
        self.msgs, self._lock = [], threading.Lock()
        self._sub = rospy.Subscriber(topic, msg_type, self._add, queue_size=200)

    def _add(self, msg):
        with self._lock:
            self.msgs.append(msg)

    def snapshot(self):
        with self._lock:
            return list(self.msgs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._sub.unregister()


def test_fixed_joints_are_latched_on_tf_static(robot, frames):
    from tf2_msgs.msg import TFMessage
    # Two latched publishers: robot_state_publisher's fixed joints, and the world service's
    # world -> base (sawyer_simulator's frame; docs/world.md).
    with Recorder('/tf_static', TFMessage) as rec:
        ours = wait_for(lambda: [m for m in rec.snapshot()
                                 if m._connection_header['callerid'] == NODE], 10.0,
                        "robot_state_publisher's /tf_static")
        msg = ours[-1]
        others = [m for m in rec.snapshot() if m._connection_header['callerid'] != NODE]
    for other in others:
        assert [(t.header.frame_id, t.child_frame_id) for t in other.transforms] == [('world', 'base')]
    got = {(t.header.frame_id, t.child_frame_id): t for t in msg.transforms}
    assert set(got) == {(parent, child) for parent, child, _, _ in frames.fixed}
    assert len(got) == 17
    for parent, child, xyz, quat in frames.fixed:
        t = got[parent, child].transform
        assert [t.translation.x, t.translation.y, t.translation.z] == pytest.approx(xyz, abs=1e-12)
        assert [t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w] == pytest.approx(quat, abs=1e-12)


def test_every_joint_state_becomes_one_tf_message_of_its_joints(robot, frames):
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage
    with Recorder('/robot/joint_states', JointState) as joints, Recorder('/tf', TFMessage) as tf:
        wait_for(lambda: len(tf.snapshot()) >= 100, 10.0, '100 /tf messages')
        tfs, states = tf.snapshot(), {m.header.stamp: m for m in joints.snapshot()}
    assert all(m._connection_header['callerid'] == NODE for m in tfs)
    matched = 0
    for msg in tfs:
        stamps = {t.header.stamp for t in msg.transforms}
        assert len(stamps) == 1
        state = states.get(stamps.pop())
        if state is None:        # sent before this test's subscription to joint_states connected
            continue
        matched += 1
        got = {t.child_frame_id: t for t in msg.transforms}
        assert {frames.movable[frames.index[n]] for n in state.name} == MOVABLE
        assert len(got) == len(MOVABLE)
        indices = [frames.index[n] for n in state.name]
        xyz, quat = frames.transforms(indices, state.position)
        for i, k in enumerate(indices):
            t = got[frames.child[k]]
            assert t.header.frame_id == frames.parent[k]
            assert [t.transform.translation.x, t.transform.translation.y,
                    t.transform.translation.z] == pytest.approx(xyz[i], abs=1e-12)
            assert [t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
                    t.transform.rotation.w] == pytest.approx(quat[i], abs=1e-12)
    assert matched >= 90
    # one /tf message per joint state: the 100 Hz of /robot/joint_states
    span = (tfs[-1].transforms[0].header.stamp - tfs[0].transforms[0].header.stamp).to_sec()
    assert (len(tfs) - 1) / span == pytest.approx(100.0, rel=0.05)


def test_tf_gives_the_hand_pose_forward_kinematics_gives(robot):
    import rospy
    import tf2_ros
    from sensor_msgs.msg import JointState
    from intera_rt.model import ARM_JOINTS, RobotModel
    model = RobotModel(rospy.get_param('/robot_description'))
    buf = tf2_ros.Buffer()
    tf2_ros.TransformListener(buf)
    wait_for(lambda: buf.can_transform('base', 'right_hand', rospy.Time(0)), 10.0,
             'the listener to hear /tf')
    with latest('/robot/joint_states', JointState) as rec:
        state = rec.wait_new(5)           # one whose /tf the listener will have heard
    q = [state.position[state.name.index(n)] for n in ARM_JOINTS]
    wait_for(lambda: buf.can_transform('base', 'right_hand', state.header.stamp), 10.0,
             'base→right_hand at a joint state\'s stamp')
    t = buf.lookup_transform('base', 'right_hand', state.header.stamp).transform
    p, quat = model.tip_pose('right_hand', q)
    assert [t.translation.x, t.translation.y, t.translation.z] == pytest.approx(p, abs=1e-9)
    assert abs(np.dot([t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w], quat)) \
        == pytest.approx(1.0, abs=1e-9)


BAD_STATES = {
    'fewer positions than names': (['right_j0', 'right_j1'], [0.5], 'ERROR',
                                   'joint_states with 2 names but 1 positions: ignored'),
    'a position that is not a number': (['head_pan'], [float('nan')], 'WARN',
                                        'position of head_pan is not finite: left out of /tf'),
}
PRIVATE_NS = '/bad_input_test'


@pytest.fixture(scope='module')
def private_publisher(robot):
    """A second robot_state_publisher, with its input and outputs in a namespace of its own:
    bad joint states go to it, not to the robot's own /robot/joint_states."""
    import subprocess
    import rospy
    from intera_rt.tooling.robot_process import REPO
    rospy.set_param(PRIVATE_NS + '/robot_description', rospy.get_param('/robot_description'))
    proc = subprocess.Popen([str(REPO / 'nodes' / 'robot_state_publisher'), '__ns:=' + PRIVATE_NS,
                             'joint_states:=%s/joint_states' % PRIVATE_NS,
                             '/tf:=%s/tf' % PRIVATE_NS, '/tf_static:=%s/tf_static' % PRIVATE_NS,
                             '_publish_frequency:=1000.0'],
                            env=robot.environ(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield PRIVATE_NS + '/robot_state_publisher'
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize('case', BAD_STATES)
def test_a_bad_joint_state_is_logged_and_has_no_effect(private_publisher, case):
    import rospy
    from rosgraph_msgs.msg import Log
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage
    names, positions, level, text = BAD_STATES[case]
    pub = rospy.Publisher(PRIVATE_NS + '/joint_states', JointState, queue_size=1)
    bad = JointState(name=names, position=positions)
    good = JointState(name=sorted(MOVABLE), position=[0.1] * len(MOVABLE))

    def logged(recorder):
        return any(m.name == private_publisher and m.level == getattr(Log, level) and text in m.msg
                   for m in recorder.snapshot())

    def send(msg):
        msg.header.stamp = rospy.Time.now()
        pub.publish(msg)
    with Recorder('/rosout', Log) as log, Recorder(PRIVATE_NS + '/tf', TFMessage) as tf:
        wait_for(lambda: pub.get_num_connections() >= 1, 20.0, 'the private publisher to hear the test')
        wait_for(lambda: send(bad) or logged(log), 10.0, 'the complaint of robot_state_publisher',
                 interval=0.2)
        bad_ones = len(tf.snapshot())
        wait_for(lambda: send(good) or len(tf.snapshot()) > bad_ones, 10.0, '/tf from a good state',
                 interval=0.1)
        msgs = tf.snapshot()
    pub.unregister()
    # Nothing of the bad states made it to /tf; the good one did, every joint, finite.
    assert bad_ones == 0
    for msg in msgs:
        assert len(msg.transforms) == len(MOVABLE)
        assert all(np.isfinite([t.transform.rotation.w, t.transform.rotation.z]).all()
                   for t in msg.transforms)


def test_a_urdf_it_cannot_read_stops_it_with_a_clear_error(robot):
    """A second robot_state_publisher, in a namespace whose robot_description is broken."""
    import subprocess
    import rospy
    from intera_rt.tooling.robot_process import REPO
    rospy.set_param('/broken_test/robot_description', '<robot name="x"><link name=')
    proc = subprocess.run([str(REPO / 'nodes' / 'robot_state_publisher'), '__ns:=/broken_test'],
                          env=robot.environ(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert 'cannot read the URDF in /broken_test/robot_description' in proc.stdout + proc.stderr
