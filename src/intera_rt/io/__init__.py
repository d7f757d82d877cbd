"""io: the robot's IO devices as data and simulation — no ROS here.

The Intera IO framework describes every device (cuff, navigator, lights, gripper, cameras)
as a set of typed signals and ports with JSON formats; clients read them from a latched
state topic and write them with set commands. `device` holds that model (signals, formats,
set commands and their validation); `buttons` the timing of a person pressing buttons;
`gripper` the electric parallel gripper's fingers; `camera` the internal cameras'
settings; `render` the software renderer their images come from. The ROS side
(topics, times, acknowledgements) is intera_rt.ros.io.
"""
