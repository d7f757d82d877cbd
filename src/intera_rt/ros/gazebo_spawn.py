"""The arm spawned into Gazebo at the robot's boot pose: gazebo_ros's spawn_model with -J for
each arm joint of `--pose` (neutral, shipping or 7 angles, as realtime_loop reads it), so
that the arm starts where the robot will hold it rather than falling from the zero pose.

    rosrun intera_rt gazebo_spawn --pose POSE [spawn_model's arguments ...]

It replaces itself with `rosrun gazebo_ros spawn_model ARGS -J right_j0 a0 ... -J right_j6 a6`.
"""
import os
import sys

from intera_rt.robot import ARM_JOINTS


def spawn_args(pose, rest):
    """spawn_model's command line for the boot pose `pose` and its other arguments."""
    from intera_rt.ros.realtime_loop import parse_pose
    args = ['rosrun', 'gazebo_ros', 'spawn_model'] + list(rest)
    for name, value in zip(ARM_JOINTS, parse_pose(pose)):
        args += ['-J', name, repr(float(value))]
    return args


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    # roslaunch appends __name:= and __log:= remappings: spawn_model takes them too.
    if '--pose' not in argv or argv.index('--pose') + 1 >= len(argv):
        sys.stderr.write('gazebo_spawn: --pose POSE is required\n')
        return 2
    i = argv.index('--pose')
    pose = argv[i + 1]
    try:
        args = spawn_args(pose, argv[:i] + argv[i + 2:])
    except ValueError as exc:
        sys.stderr.write('gazebo_spawn: %s\n' % exc)
        return 2
    os.execvp(args[0], args)
    return 1                            # (not reached)


if __name__ == '__main__':
    sys.exit(main())
