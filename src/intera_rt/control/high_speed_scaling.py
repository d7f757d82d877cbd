"""High-speed scaling (seed 003's third collision model): when the limb moves faster than
`threshold` (0.2 m/s) in Cartesian space toward a self-collision, the position and velocity
controllers' speed is scaled down, and their references — positions integrated from the
scaled velocities — carry it to the joints (seed 003: "the corresponding velocities are
scaled down and converted back as position commands").

Its own, larger shapes (model.high_speed: the armnav shapes grown by `margin`): a pair of
them overlapping beyond its rest-pose allowance, whose distance the controller's heading
closes, gives f = its velocity_scale (1 at the overlap's start, 0 at 2·margin in). With V
the limb's unscaled Cartesian speed (the fastest of its joints' origins and right_hand at
the reference velocity of the last tick, divided by the scale applied then), the scale is
min(1, max(f, threshold / V)): a limb slower than `threshold` is never slowed, a fast one is
slowed as its blocks close in, down to `threshold` where they are deepest, never below (it
keeps moving, and the armnav shapes' avoidance takes over from there). Motion that opens
every near pair's distance is not slowed.

Idle while /robot/limb/right/suppress_collision_avoidance arrives, and under the speed
scaling bypass (control.safety_status). State fields: `active` (1 while it slows the arm),
`scale` (its scale this tick; 1 = none), `speed` (m/s, V when a pair was near, else 0).
"""
import math

import numpy as np

from intera_rt.control.base import Additive
from intera_rt.model.avoidance import default_armnav_xml
from intera_rt.model.high_speed import DEFAULT_MARGIN, HighSpeedShapes
from intera_rt.options import Option

THRESHOLD = 0.2                # m/s (seed 003)
# The applied scale V is divided by is taken as at least this: a limb almost stopped by
# another scaler is not taken for a fast one.
MIN_APPLIED = 0.05
# m: no point of the limb is farther than this from any arm joint's axis (Sawyer reaches
# 1.26 m), so Σ|q̇|·REACH bounds its Cartesian speed
REACH = 1.3


class HighSpeedScaling(Additive):
    name = 'high_speed_scaling'
    interaction = False
    OPTIONS = {
        'threshold': Option(float, THRESHOLD, "m/s of the limb's Cartesian speed above which "
                            'the high-speed shapes slow it (seed 003: 0.2; > 0)'),
        'margin': Option(float, DEFAULT_MARGIN, 'm the high-speed shapes grow the armnav '
                         'shapes by on every face (> 0)'),
        'enabled': Option(bool, True, 'false: never scales'),
        'armnav_urdf': Option(str, None, "the armnav URDF text (default: this checkout's "
                              'urdf/sawyer_armnav.urdf; the robot passes '
                              '/robot/armnav_robot_description)'),
    }
    state_fields = (('active', 1), ('scale', 1), ('speed', 1))

    def __init__(self, context):
        super().__init__(context)
        option = self.options
        self.threshold = float(option['threshold'])
        if not (math.isfinite(self.threshold) and self.threshold > 0.0):
            raise ValueError('high_speed_scaling threshold must be > 0 m/s, got %r'
                             % option['threshold'])
        margin = float(option['margin'])
        if not (math.isfinite(margin) and margin > 0.0):
            raise ValueError('high_speed_scaling margin must be > 0 m, got %r' % option['margin'])
        self.enabled = option['enabled']
        xml = option['armnav_urdf']
        if xml is None:
            xml = default_armnav_xml()
        self.shapes = HighSpeedShapes(xml, margin)
        self._reference = None       # the last tick's reference velocity (7, rad/s)
        self._applied = 1.0          # the speed scale applied in that tick
        self._cruise = math.inf      # the limb's speed when it last met the blocks unscaled
        self._scale, self._speed = 1.0, 0.0          # this tick's, until update reports them
        self._shown = (1.0, 0.0)                     # the last tick's, for report

    def speed_scale(self, state, velocity):
        """The fraction (0..1) of its speed the active controller may use, heading for
        `velocity` (see the module docstring)."""
        if not self.enabled or self._reference is None \
                or state.suppressed('collision_avoidance'):
            return 1.0
        applied = max(self._applied, MIN_APPLIED)
        if float(np.abs(self._reference).sum()) * REACH <= self.threshold * applied:
            return 1.0                       # too slow to be fast anywhere: skip the shapes
        shapes = self.shapes
        near = shapes.velocity_scale_unchecked(state.q, state.q_head, velocity)
        if near >= 1.0:
            self._cruise = math.inf
            return 1.0
        speed = shapes.limb_speed(state.q, state.q_head, self._reference)
        if self._applied >= 1.0:
            self._cruise = speed
        else:
            # While the reference still decelerates toward a scale just lowered, speed /
            # applied overstates V: it is at most the speed the blocks were met at.
            speed = min(speed / applied, self._cruise)
        scale = 1.0 if speed <= self.threshold else max(near, self.threshold / speed)
        self._scale, self._speed = scale, speed
        return scale

    def update(self, state, controller, out):
        # After the controller: what it was allowed this tick, and the reference it made.
        self._reference = out.velocity
        self._applied = state.speed_scale
        self._shown = (self._scale, self._speed)
        self._scale, self._speed = 1.0, 0.0
        return None

    def reset(self, state):
        self._reference = None
        self._cruise = math.inf
        self._applied = 1.0
        self._scale, self._speed = 1.0, 0.0
        self._shown = (1.0, 0.0)

    def report(self, put):
        scale, speed = self._shown
        put('active', 1.0 if scale < 1.0 else 0.0)
        put('scale', scale)
        put('speed', speed)
