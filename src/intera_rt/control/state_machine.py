"""The robot's enable state machine (what /robot/state reports).

enabled / stopped / error / E-stop button and source, as RobotAssemblyState defines them
(its `homed` is the core's control.homing).
Disabled or stopped: brakes on, joint commands refused.
"""
from dataclasses import dataclass


class EstopButton:
    UNPRESSED = 0
    PRESSED = 1
    UNKNOWN = 2
    RELEASED = 3


class EstopSource:
    NONE = 0
    USER = 1
    UNKNOWN = 2
    FAULT = 3
    ENGINE = 4


@dataclass
class RobotStateMachine:
    enabled: bool = True
    stopped: bool = False
    error: bool = False
    estop_button: int = EstopButton.UNPRESSED
    estop_source: int = EstopSource.NONE
    low_voltage: bool = False

    @property
    def ready(self):
        return not self.stopped and not self.error

    @property
    def motion_allowed(self):
        return self.enabled and not self.stopped and not self.error

    def why_not_moving(self):
        if self.estop_button == EstopButton.PRESSED:
            return 'the E-stop button is pressed'
        if self.error:
            return 'the robot is in error'
        if self.stopped:
            return 'the robot is stopped'
        if not self.enabled:
            return 'the robot is disabled'
        return None

    def set_enable(self, on):
        """set_super_enable. Returns a reason string when refused."""
        if on and (self.stopped or self.error):
            return 'enable refused: %s; reset first' % self.why_not_moving()
        self.enabled = bool(on)
        return None

    def stop(self, source=EstopSource.UNKNOWN):
        """set_super_stop: a software stop the client may reset."""
        self.stopped = True
        self.enabled = False
        if self.estop_source == EstopSource.NONE:
            self.estop_source = source

    def reset(self):
        """set_super_reset: clears stop and error unless the button is still down; the
        robot comes back disabled."""
        if self.estop_button == EstopButton.PRESSED:
            return 'reset refused: the E-stop button is pressed'
        self.stopped = False
        self.error = False
        self.enabled = False
        self.estop_button = EstopButton.UNPRESSED
        self.estop_source = EstopSource.NONE
        return None

    def press_estop(self):
        self.estop_button = EstopButton.PRESSED
        self.estop_source = EstopSource.USER
        self.stopped = True
        self.enabled = False

    def release_estop(self):
        """Releasing the button does not restart the arm: it stays stopped until reset."""
        if self.estop_button == EstopButton.PRESSED:
            self.estop_button = EstopButton.RELEASED

    def set_error(self, on=True):
        if on:
            self.error = True
            self.stopped = True
            self.enabled = False
            if self.estop_source == EstopSource.NONE:
                self.estop_source = EstopSource.FAULT
        else:
            self.error = False
