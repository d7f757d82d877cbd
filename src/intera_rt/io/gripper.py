"""The Rethink electric parallel gripper as an IO device, with simulated fingers.

Signals (robot_contract.md §3.9): written by clients — position_m (finger separation to go
to, 0..0.041667 m), speed_mps (0.15..3 m/s), dead_zone_m, holding_force_n, go, calibrate,
reboot, right_gripper_tip_object_kg; read — position_response_m, force_response_n,
is_calibrated, is_moving, is_gripping, has_error.

The fingers' separation moves toward the target at the commanded speed. An object placed
between them (sim control: width, mass) stops a closing move where they meet it: the
gripper then grips it (is_gripping, force_response_n = holding_force_n), until a move opens
the fingers again. A target is reached when within dead_zone_m. Writing position_m starts a
move (go = true); go = false stops the fingers where they are. Moves need calibration:
calibrate sweeps the fingers closed and open (at CALIBRATION_SPEED) and sets is_calibrated;
reboot takes REBOOT_TIME (device status busy), then the gripper is uncalibrated. An object
in the way of a calibration is an error (has_error) that only a reboot clears.

No ROS, no clock: `step(now)` advances the fingers to time `now` (s), called at the
device's update rate while `active()`.
"""
import math

from intera_rt.io.device import BUSY, CommandError, Device, OK_DETAIL, READY, Signal, in_range

MAX_POSITION = 0.041667        # m: finger separation fully open
MIN_SPEED, MAX_SPEED = 0.15, 3.0       # m/s (the SDK's limits)
DEFAULT_SPEED = 1.5            # m/s
DEFAULT_DEAD_ZONE = 0.002      # m
MAX_FORCE = 40.0               # N: two fingers of 20 N (the URDF's finger effort)
DEFAULT_FORCE = 20.0           # N
MAX_OBJECT_KG = 4.0            # the arm's payload
CALIBRATION_SPEED = 0.15       # m/s: one close-open sweep takes ~0.56 s
REBOOT_TIME = 0.5              # s
UPDATE_RATE = 50.0             # Hz the fingers are simulated at while moving
_EPS = 1e-9

WRITABLE = ('position_m', 'speed_mps', 'dead_zone_m', 'holding_force_n', 'go', 'calibrate',
            'reboot', 'right_gripper_tip_object_kg')


class ElectricGripper(Device):
    """Device 'right_gripper' of IO node 'end_effector' (props.type ElectricParallelGripper).

    Boots calibrated and fully open, as Rethink's simulator does; `reboot` makes it
    uncalibrated."""

    def __init__(self, name='right_gripper', calibrated=True):
        hint = 'the gripper reports it'
        signals = [
            Signal('position_m', 'float', 'output', MAX_POSITION, writable=True,
                   check=in_range('position_m', 0.0, MAX_POSITION, ' m')),
            Signal('position_response_m', 'float', 'input', MAX_POSITION, read_only_hint=hint),
            Signal('speed_mps', 'float', 'output', DEFAULT_SPEED, writable=True,
                   check=in_range('speed_mps', MIN_SPEED, MAX_SPEED, ' m/s')),
            Signal('dead_zone_m', 'float', 'output', DEFAULT_DEAD_ZONE, writable=True,
                   check=in_range('dead_zone_m', 0.0, MAX_POSITION, ' m')),
            Signal('holding_force_n', 'float', 'output', DEFAULT_FORCE, writable=True,
                   check=in_range('holding_force_n', 0.0, MAX_FORCE, ' N')),
            Signal('force_response_n', 'float', 'input', 0.0, read_only_hint=hint),
            Signal('go', 'bool', 'output', False, writable=True),
            Signal('calibrate', 'bool', 'output', False, writable=True),
            Signal('reboot', 'bool', 'output', False, writable=True),
            Signal('is_calibrated', 'bool', 'input', bool(calibrated), read_only_hint=hint),
            Signal('is_moving', 'bool', 'input', False, read_only_hint=hint),
            Signal('is_gripping', 'bool', 'input', False, read_only_hint=hint),
            Signal('has_error', 'bool', 'input', False, read_only_hint=hint),
            Signal('right_gripper_tip_object_kg', 'float', 'output', 0.0, writable=True,
                   check=in_range('right_gripper_tip_object_kg', 0.0, MAX_OBJECT_KG, ' kg')),
        ]
        super().__init__(name, 'end_effector', signals, device_type='ElectricParallelGripper',
                         update_rate=UPDATE_RATE,
                         params={'max_position_m': MAX_POSITION, 'min_speed_mps': MIN_SPEED,
                                 'max_speed_mps': MAX_SPEED, 'max_force_n': MAX_FORCE})
        self.position = MAX_POSITION      # m, the fingers' separation
        self.target = MAX_POSITION
        self.object = None                # (width m, mass kg) between the fingers
        self.error = ''
        self._phase = None                # None, 'move', 'calibrate_close', 'calibrate_open', 'reboot'
        self._reboot_until = None
        self._last = None                 # time of the last step
        self.plant = False                # True: the fingers are a simulated plant's (follow)

    # --- status ----------------------------------------------------------------------------
    def active(self):
        """True while the fingers move or the gripper calibrates / reboots."""
        return self._phase is not None

    @property
    def rebooting(self):
        return self._phase == 'reboot'

    @property
    def calibrated(self):
        return self.signals['is_calibrated'].value

    def reached(self):
        return abs(self.position - self.target) <= self.signals['dead_zone_m'].value + _EPS

    # --- writes --------------------------------------------------------------------------------
    def validate(self, signal, value):
        name = signal.name
        if self._phase == 'reboot' and name not in ('reboot',):
            raise CommandError('%s: the gripper is rebooting' % name)
        if name in ('position_m', 'go', 'calibrate') and value is not False and self.error:
            raise CommandError('%s: the gripper has an error (%s); reboot it first' % (name, self.error))
        if name in ('position_m', 'go') and value is not False and not self.calibrated:
            raise CommandError('%s: the gripper is not calibrated; set calibrate first' % name)
        if name in ('position_m', 'go') and self._phase in ('calibrate_close', 'calibrate_open'):
            raise CommandError('%s: the gripper is calibrating' % name)

    def apply(self, signal, value):
        name = signal.name
        signal.value = value
        if name == 'position_m':
            self.move_to(value)
        elif name == 'go':
            if value:
                self._start_move()
            else:
                self.stop()
        elif name == 'calibrate' and value:
            self._phase = 'calibrate_close'
            self._set('is_moving', True)
            self._release()
        elif name == 'reboot' and value:
            self._phase = 'reboot'
            self._reboot_until = None
            self.tag, self.detail = BUSY, OK_DETAIL
            self._release()
            self.target = self.position
            self._set('is_moving', False)
        elif name == 'holding_force_n' and self.signals['is_gripping'].value:
            self._set('force_response_n', value)

    def move_to(self, position):
        """Start a move of the fingers to `position` (m; the caller has checked it)."""
        self.signals['position_m'].value = position
        self.target = position
        self._start_move()

    def stop(self):
        """go = false: the fingers stop where they are (holding an object they grip)."""
        self.signals['go'].value = False
        if self._phase == 'move':
            self._phase = None
        self.target = self.position
        self.signals['position_m'].value = _round(self.position)
        self._set('is_moving', False)

    def _start_move(self):
        self.signals['go'].value = True
        if self.signals['is_gripping'].value and self.target > self.position:
            self._release()
        self._phase = 'move'
        self._set('is_moving', True)

    def _release(self):
        self._set('is_gripping', False)
        self._set('force_response_n', 0.0)

    # --- sim control ----------------------------------------------------------------------
    def place_object(self, width, mass):
        """Put an object `width` m across between the fingers (0 removes it). Returns a
        description; ValueError naming the value when it cannot be placed."""
        if not (math.isfinite(width) and math.isfinite(mass)):
            raise ValueError('width and mass must be finite (got %r m, %r kg)' % (width, mass))
        if mass < 0:
            raise ValueError('mass %g kg is negative' % mass)
        if width == 0:
            had = self.object
            self.object = None
            if self.signals['is_gripping'].value:
                self._release()
                self._phase = 'move'              # the fingers close on to their target
                self._set('is_moving', True)
            return 'object removed' if had else 'there was no object'
        if not 0 < width <= MAX_POSITION:
            raise ValueError('width %g m is outside (0, %g] (the gripper\'s opening; 0 removes '
                             'the object)' % (width, MAX_POSITION))
        if width > self.position + _EPS:
            raise ValueError('the fingers are %.4f m apart: open them wider than %.4f m first'
                             % (self.position, width))
        self.object = (float(width), float(mass))     # a closing move will meet it
        return 'object %.4f m wide, %.3f kg between the fingers' % (width, mass)

    # --- simulation ----------------------------------------------------------------------
    # --- a plant's fingers ------------------------------------------------------------------
    def follow(self, separation, gripping, force):
        """The fingers of a simulated plant (a world with the gripper: docs/world.md) as
        measured: from now on they are the device's, and its moves and calibrations become
        targets for them (plant_command). Returns True when a value changed."""
        before = self._snapshot()
        self.plant = True
        self.position = min(max(float(separation), 0.0), MAX_POSITION)
        dead = self.signals['dead_zone_m'].value + _EPS
        # (an opening move lets go at once; the plant's next states may not know it yet)
        opening = self._phase == 'move' and self.target > self.position + dead
        held = bool(gripping) and not opening
        if held != bool(self.signals['is_gripping'].value):
            if held:
                self._set('is_gripping', True)
            else:
                self._release()
        if held:
            self._set('force_response_n', float(force))
        phase = self._phase
        if phase == 'move' and (held or abs(self.position - self.target) <= dead):
            self._phase = None
            self._set('is_moving', False)
        elif phase == 'calibrate_close' and (held or self.position <= dead):
            if held:
                self._phase = None
                self.error = 'calibration blocked by an object %.4f m wide' % self.position
                self._set('has_error', True)
                self._set('calibrate', False)
                self._set('is_moving', False)
            else:
                self._phase = 'calibrate_open'
        elif phase == 'calibrate_open' and self.position >= MAX_POSITION - dead:
            self._phase = None
            self.target = MAX_POSITION
            self.signals['position_m'].value = MAX_POSITION
            self._set('is_calibrated', True)
            self._set('calibrate', False)
            self._set('is_moving', False)
        self.signals['position_response_m'].value = _round(self.position)
        return self._snapshot() != before

    def plant_command(self):
        """(separation m, speed m/s, force N) the plant's fingers are to go to now."""
        target = {'calibrate_close': 0.0, 'calibrate_open': MAX_POSITION}.get(self._phase, self.target)
        speed = CALIBRATION_SPEED if self._phase in ('calibrate_close', 'calibrate_open') \
            else self.signals['speed_mps'].value
        return (float(target), float(speed), float(self.signals['holding_force_n'].value))

    def step(self, now):
        """Advance the fingers to time `now` (s). Returns True when a value changed."""
        before = self._snapshot()
        dt = 0.0 if self._last is None else min(max(now - self._last, 0.0), 0.1)
        self._last = now
        phase = self._phase
        if self.plant and phase != 'reboot':
            return False                  # the plant moves them (follow)
        if phase == 'reboot':
            if self._reboot_until is None:
                self._reboot_until = now + REBOOT_TIME
            elif now >= self._reboot_until:
                self._phase = None
                self.error = ''
                self.tag, self.detail = READY, OK_DETAIL
                self._set('has_error', False)
                self._set('is_calibrated', False)
                self._set('reboot', False)
                self.signals['go'].value = False
        elif phase == 'move':
            self._move(self.signals['speed_mps'].value * dt)
        elif phase == 'calibrate_close':
            if self.object is not None and self.position - CALIBRATION_SPEED * dt <= self.object[0]:
                self.position = self.object[0]
                self._phase = None
                self.error = 'calibration blocked by an object %.4f m wide' % self.object[0]
                self._set('has_error', True)
                self._set('calibrate', False)
                self._set('is_moving', False)
            else:
                self.position = max(0.0, self.position - CALIBRATION_SPEED * dt)
                if self.position <= 0.0:
                    self._phase = 'calibrate_open'
        elif phase == 'calibrate_open':
            self.position = min(MAX_POSITION, self.position + CALIBRATION_SPEED * dt)
            if self.position >= MAX_POSITION:
                self._phase = None
                self.target = MAX_POSITION
                self.signals['position_m'].value = MAX_POSITION
                self._set('is_calibrated', True)
                self._set('calibrate', False)
                self._set('is_moving', False)
        if self._phase is None:
            self._last = None
        self.signals['position_response_m'].value = _round(self.position)
        return self._snapshot() != before

    def _move(self, travel):
        target = self.target
        closing = target < self.position
        if closing and self.object is not None and self.object[0] > target + self.signals['dead_zone_m'].value \
                and self.position - travel <= self.object[0]:
            # the fingers meet the object: they stop there and squeeze it
            self.position = self.object[0]
            self._phase = None
            self._set('is_moving', False)
            self._set('is_gripping', True)
            self._set('force_response_n', self.signals['holding_force_n'].value)
            return
        if abs(target - self.position) <= travel:
            self.position = target
            self._phase = None
            self._set('is_moving', False)
        else:
            self.position += travel if target > self.position else -travel

    def _set(self, name, value):
        self.signals[name].value = value

    def _snapshot(self):
        return (self.tag,) + tuple(s.value for s in self.signals.values()) + (_round(self.position),)


def _round(x):
    return round(x, 6)
