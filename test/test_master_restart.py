"""The ROS master restarted under a running robot (same URI): the robot's nodes register
again by themselves, the robot's parameters are back, and a new client connects and uses
the robot as before — state topics, the FK service, a joint command that moves the arm.

rospy registers a node once; intera_rt.ros.node.MasterWatch notices the new master (its
pid changed) and registers everything again. This module runs its own master (as a user's
roscore would be), boots the robot against it, and talks to the robot through client
processes, as users do: no rospy node in the test process, which would not survive the
restart either."""
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rosharness import wait_for
from intera_rt.tooling.robot_process import ROBOT_NODES, RobotProcess, free_port

pytestmark = pytest.mark.ros        # its own master and robot, without the robot fixture

REPO = Path(__file__).resolve().parents[1]
BACK_TIMEOUT = 30.0           # s (wall) for every node to be registered again
QUIET = 2.0                   # s: two periods of the nodes' master watch (intera_rt.ros.node)

# A client as a user writes one: its own process, its own rospy node.
CLIENT = textwrap.dedent('''
    import sys
    import rospy
    from intera_core_msgs.msg import JointCommand, RobotAssemblyState
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    rospy.init_node('restart_client', anonymous=True)
    ARM = ['right_j%d' % i for i in range(7)]
    state = rospy.wait_for_message('/robot/state', RobotAssemblyState, timeout=20)
    assert state.enabled, 'robot not enabled'
    fk = '/ExternalTools/right/PositionKinematicsNode/FKService'
    rospy.wait_for_service(fk, 20)
    js = rospy.wait_for_message('/robot/joint_states', JointState, timeout=20)
    q = [js.position[js.name.index(n)] for n in ARM]
    resp = rospy.ServiceProxy(fk, SolvePositionFK)(SolvePositionFKRequest(
        configuration=[JointState(name=ARM, position=q)], tip_names=['right_hand']))
    assert list(resp.isValid) == [True], resp
    target = q[0] + float(sys.argv[1])
    pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1)
    rate = rospy.Rate(100)
    deadline = rospy.get_time() + 20.0
    while rospy.get_time() < deadline:
        pub.publish(JointCommand(mode=1, names=['right_j0'], position=[target]))
        js = rospy.wait_for_message('/robot/joint_states', JointState, timeout=5)
        if abs(js.position[js.name.index('right_j0')] - target) < 0.005:
            print('CLIENT OK: right_j0 at %.3f' % target)
            sys.exit(0)
        rate.sleep()
    sys.exit('right_j0 never reached %.3f' % target)
''')


def start_master(port, log_dir):
    log = open(log_dir / ('master_%d.log' % time.monotonic_ns()), 'wb')
    env = dict(os.environ, ROS_MASTER_URI='http://127.0.0.1:%d' % port, ROS_IP='127.0.0.1',
               ROS_LOG_DIR=str(log_dir / 'ros_log'))
    proc = subprocess.Popen(['rosmaster', '--core', '-p', str(port)], stdout=log,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    master = _master(port)
    deadline = time.monotonic() + 20.0
    while True:
        try:
            master.getPid()
            return proc
        except Exception:  # noqa: BLE001 - not up yet
            assert proc.poll() is None, 'rosmaster exited'
            assert time.monotonic() < deadline, 'rosmaster did not start'
            time.sleep(0.1)


def _master(port):
    import rosgraph
    return rosgraph.Master('/master_restart_test', master_uri='http://127.0.0.1:%d' % port)


def registrations(port):
    pubs, subs, srvs = _master(port).getSystemState()
    out = {}
    for kind, table in (('pub', pubs), ('sub', subs), ('srv', srvs)):
        for name, nodes in table:
            for node in nodes:
                if node in ROBOT_NODES:
                    out.setdefault(node, set()).add((kind, name))
    return out


def answers(port):
    try:
        _master(port).getPid()
        return True
    except Exception:  # noqa: BLE001 - refused, reset: not there
        return False


def settled_registrations(port, quiet=QUIET, timeout=60.0):
    """The robot's registrations once every node is up and they have not changed for `quiet`
    s. Each node takes the parameter snapshot it restores after a restart on its master
    watch's first look, right after init_node (intera_rt.ros.node), so by then every
    snapshot has been taken too."""
    seen = {'regs': None, 'since': time.monotonic()}

    def settled():
        regs = registrations(port)
        if regs != seen['regs']:
            seen['regs'], seen['since'] = regs, time.monotonic()
        return (set(regs) == set(ROBOT_NODES) and time.monotonic() - seen['since'] >= quiet
                and regs)
    return wait_for(settled, timeout, 'every robot node registered, then %.0f s without a '
                    'change' % quiet, interval=0.2)


def run_client(port, delta, log_dir):
    env = dict(os.environ, ROS_MASTER_URI='http://127.0.0.1:%d' % port, ROS_IP='127.0.0.1',
               ROS_LOG_DIR=str(log_dir / 'ros_log'))
    return subprocess.run([str(REPO / 'scripts' / 'env'), 'python', '-c', CLIENT, repr(delta)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp('master_restart')
    port = free_port()
    master = start_master(port, log_dir)
    robot = RobotProcess(['--sim-time', '--speed', '1'], log_dir / 'sawyer.log', log_dir / 'ros_log')
    robot.port, robot.master_uri = port, 'http://127.0.0.1:%d' % port
    w = {'port': port, 'master': master, 'robot': robot, 'log_dir': log_dir}
    try:
        robot.start().wait_published(90.0)
        yield w
    finally:
        robot.stop()
        for proc in (w['master'],):
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)


def test_the_robot_registers_again_and_a_new_client_uses_it(world):
    port, log_dir, robot = world['port'], world['log_dir'], world['robot']
    before = settled_registrations(port)
    first = run_client(port, 0.1, log_dir)
    assert first.returncode == 0, first.stdout.decode()[-2000:]

    # the master dies and a new one starts on the same port
    old_pid = _master(port).getPid()
    world['master'].kill()
    world['master'].wait(5)
    wait_for(lambda: not answers(port), 10.0, 'the killed master to stop answering')
    world['master'] = start_master(port, log_dir)
    assert _master(port).getPid() != old_pid

    deadline = time.monotonic() + BACK_TIMEOUT
    while True:
        now = registrations(port)
        missing = {n: sorted(before[n] - now.get(n, set())) for n in before if before[n] - now.get(n, set())}
        if not missing:
            break
        assert time.monotonic() < deadline, 'not registered again after %.0f s: %s' % (BACK_TIMEOUT, missing)
        time.sleep(0.2)
    master = _master(port)
    assert master.hasParam('/robot_description') and master.hasParam('/robot/armnav_robot_description')
    assert master.getParam('/use_sim_time') is True
    assert robot.alive(), robot.log_tail()

    second = run_client(port, -0.1, log_dir)
    assert second.returncode == 0, second.stdout.decode()[-2000:]
    assert 'CLIENT OK' in second.stdout.decode()
