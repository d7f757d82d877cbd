"""scripts/rviz_screenshot [OUT.png]: the README's RViz picture, made the way a person sees
it: `scripts/sawyer --rviz` on a private ROS master and a virtual display (Xvfb, Mesa's
software OpenGL), the arm moved to a pose, a sim obstacle placed, the head camera
streaming, then a screenshot once two in a row are the same (every display has drawn).

Exit code 0 and the PNG's path on success; 1 with the reason (and the robot's log) if the
robot or RViz did not come up within the deadlines."""
import argparse
import json
import sys
import time
from pathlib import Path

from intera_rt.robot import ARM_JOINTS
from intera_rt.tooling.robot_process import REPO, RobotProcess
from intera_rt.tooling.xdisplay import VirtualDisplay

DEFAULT_OUT = REPO / 'docs' / 'img' / 'rviz.png'
POSE = (0.45, -0.75, 0.0, 1.55, 0.0, 0.75, 1.7)     # reaching forward and down, to its side
OBSTACLE = ('box', (0.75, -0.05, -0.15), (0.3, 0.3, 0.3))     # shape, centre in base, size
BOOT_TIMEOUT = 90.0        # s for the robot
SETTLE_TIMEOUT = 60.0      # s for RViz to draw everything and stand still
STATUS_BAR = 40            # px at the bottom of the window: left out of the comparison


def _stream_head_camera(timeout=10.0):
    """camera_streaming on the head camera, sent the IO framework's way (republished until
    its time shows in the device's state)."""
    import rospy
    from intera_core_msgs.msg import IOComponentCommand, IODeviceStatus
    path = '/io/internal_camera/head_camera/'
    pub = rospy.Publisher(path + 'command', IOComponentCommand, queue_size=1)
    msg = IOComponentCommand(time=rospy.Time.now(), op='set', args=json.dumps(
        {'signals': {'camera_streaming': {'format': {'type': 'bool'}, 'data': [True]}}}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pub.publish(msg)
        try:
            state = rospy.wait_for_message(path + 'state', IODeviceStatus, 0.2)
        except rospy.ROSException:
            continue
        if msg.time in state.commands:
            return
    print('[rviz_screenshot] warning: the head camera did not start streaming', file=sys.stderr)


def _stage_scene():
    import rospy
    from geometry_msgs.msg import Point, Pose, Quaternion
    from intera_rt_msgs.srv import AddObstacle, SetJointPositions
    for name in ('set_joint_positions', 'add_obstacle'):
        rospy.wait_for_service('/intera_rt/sim/' + name, 10.0)
    resp = rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions)(
        list(ARM_JOINTS), list(POSE))
    if not resp.success:
        raise RuntimeError('set_joint_positions: %s' % resp.message)
    shape, centre, size = OBSTACLE
    resp = rospy.ServiceProxy('/intera_rt/sim/add_obstacle', AddObstacle)(
        'obstacle', shape, Pose(Point(*centre), Quaternion(0, 0, 0, 1)), list(size))
    if not resp.success:
        raise RuntimeError('add_obstacle: %s' % resp.message)
    _stream_head_camera()


def _settled_screenshot(display, timeout):
    """A screenshot equal (but for the status bar) to the one a second before it."""
    import numpy as np
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        image = display.screenshot()
        array = np.asarray(image)[:-STATUS_BAR]       # not the frame rate RViz shows there
        if last is not None and np.array_equal(array, last):
            return image
        last = array
        time.sleep(1.0)
    raise RuntimeError('RViz did not settle within %.0f s' % timeout)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='rviz_screenshot', description=__doc__.split('\n\n')[0])
    parser.add_argument('out', nargs='?', default=str(DEFAULT_OUT),
                        help='the PNG to write (default: docs/img/rviz.png)')
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    log_dir = Path('/tmp') / ('rviz_screenshot_%d' % time.time_ns())
    with VirtualDisplay() as display:
        import os
        os.environ.update(display.env())
        robot = RobotProcess(['--rviz'], log_dir / 'sawyer.log', log_dir / 'ros_log')
        robot.start()
        try:
            robot.wait_published(BOOT_TIMEOUT)
            os.environ['ROS_MASTER_URI'] = robot.master_uri
            import rospy
            rospy.init_node('rviz_screenshot', anonymous=True, disable_signals=True)
            _stage_scene()
            image = _settled_screenshot(display, SETTLE_TIMEOUT)
            image.save(out)
        except (RuntimeError, OSError) as exc:
            print('[rviz_screenshot] error: %s\n--- %s ---\n%s' % (exc, robot.log_path,
                                                                 robot.log_tail(40)),
                  file=sys.stderr)
            return 1
        finally:
            try:
                import rospy
                rospy.signal_shutdown('done')
            except ImportError:
                pass
            robot.stop()
    print(out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
