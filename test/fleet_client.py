"""An SDK-style episode program for scripts/fleet: on the robot at ROS_MASTER_URI, enable the
arm (as the SDK's RobotEnable does), move right_j0 to a target that depends on FLEET_INDEX
with position commands at 100 Hz (as Limb.move_to_joint_positions does), and check through
/robot/joint_states that the arm got there. Exit 0 when it did; 1 with the reason when not."""
import os
import sys
import time

ARM = ['right_j%d' % i for i in range(7)]
TOL = 0.008726646           # intera_interface JOINT_ANGLE_TOLERANCE
TIMEOUT = 30.0              # s wall clock: the machine may be busy with other robots


def main():
    import rospy
    from intera_core_msgs.msg import RobotAssemblyState, JointCommand
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool

    index = int(os.environ['FLEET_INDEX'])
    rospy.init_node('fleet_client_%d' % index, disable_signals=True)
    state = rospy.wait_for_message('/robot/state', RobotAssemblyState, timeout=TIMEOUT)
    if not state.enabled:
        enable = rospy.Publisher('/robot/set_super_enable', Bool, queue_size=10)
        deadline = time.monotonic() + TIMEOUT
        while not rospy.wait_for_message('/robot/state', RobotAssemblyState,
                                         timeout=TIMEOUT).enabled:
            if time.monotonic() > deadline:
                print('robot %d: not enabled after %.0f s' % (index, TIMEOUT))
                return 1
            enable.publish(True)
            time.sleep(0.1)
    latest = {}
    rospy.Subscriber('/robot/joint_states', JointState,
                     lambda m: latest.update(zip(m.name, m.position)), queue_size=1)
    deadline = time.monotonic() + TIMEOUT
    while not all(j in latest for j in ARM):
        if time.monotonic() > deadline:
            print('robot %d: no arm joints on /robot/joint_states' % index)
            return 1
        time.sleep(0.01)
    start = [latest[j] for j in ARM]
    target = list(start)
    target[0] = start[0] + 0.2 + 0.05 * index
    pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=10,
                          tcp_nodelay=True)
    cmd = JointCommand(mode=JointCommand.POSITION_MODE, names=ARM, position=target)
    while abs(latest['right_j0'] - target[0]) > TOL:
        if time.monotonic() > deadline:
            print('robot %d: right_j0 at %.4f, not at %.4f after %.0f s'
                  % (index, latest['right_j0'], target[0], TIMEOUT))
            return 1
        cmd.header.stamp = rospy.Time.now()
        pub.publish(cmd)
        time.sleep(0.01)
    print('robot %d on %s: right_j0 %.4f -> %.4f rad (target %.4f)'
          % (index, os.environ['ROS_MASTER_URI'], start[0], latest['right_j0'], target[0]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
