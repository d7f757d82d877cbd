"""Tooling around the robot, not part of it: a robot run as a child process for tests and
benches (robot_process), many robots at once (fleet, behind scripts/fleet), a virtual X
display (xdisplay) and the README's RViz picture (rviz_screenshot, behind
scripts/rviz_screenshot)."""
