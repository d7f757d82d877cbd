"""intera_rt: an open re-implementation of the software inside a Rethink Sawyer arm (Intera 5.3), on ROS 1."""
