"""The robot's IO nodes on ROS: the IO framework protocol (framework) and one node per IO
node of the robot — robot_node (cuff, navigator, lights), end_effector_node (electric
gripper), camera_node (internal cameras)."""
