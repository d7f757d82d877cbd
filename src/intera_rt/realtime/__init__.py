"""realtime: the realtime core (boards, state machine, joint control ticked at 1 kHz) and
the process it runs in. No ROS."""
