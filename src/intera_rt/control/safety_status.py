"""The speed scaling's status and its bypass (beyond the robot, after seed 002's safety
controller status): what /intera_rt/safety_status reports, and a bypass of the speed
scaling that re-arms itself.

Status: the minimum clearance (m; < 0 an overlap beyond the pair's rest-pose allowance) over
the pairs of armnav shapes collision avoidance watches, and that pair; the speed scale the
position and velocity controllers were allowed this tick (ArmState.speed_scale: the smaller
of --velocity-scaling's and high-speed scaling's; 1 = unscaled). The clearances are looked
at a tenth of the pairs per tick, so each is at most SWEEP_TICKS ms old (every state the
core sends sees a full sweep) and a tick pays for a few distances only.

Bypass (control.commands.BypassSpeedScaling, the /intera_rt/bypass_speed_scaling service):
the core applies no speed scaling for `bypass_timeout` s (seed 002's default 60 s), then
re-arms it by itself; off re-arms it at once. Collision avoidance's torques are untouched:
only the slowing is bypassed (driving into a folded pose on purpose).

An additive that adds nothing: it runs after the controller to see the scale applied. State
fields: `min_clearance`, `pair` (2: the pair's shape indices, model.avoidance.shape_links;
-1 before the first sweep), `speed_scale`, `bypassed`, `bypass_left` (s).
"""
import math

import numpy as np

from intera_rt.control import commands as cmds
from intera_rt.control.base import Additive
from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml
from intera_rt.options import Option

BYPASS_TIMEOUT = 60.0          # s (seed 002's safety_bypass_timeout default)
MAX_BYPASS = 600.0             # s (seed 002's bound)
SWEEP_TICKS = 10               # ticks over which every watched pair is looked at
BYPASS = 'speed_scaling'       # what the bypass suppresses (control.base.Suppressions)


class SafetyStatus(Additive):
    name = 'safety_status'
    interaction = False
    COMMANDS = (cmds.BypassSpeedScaling,)
    OPTIONS = {
        'bypass_timeout': Option(float, BYPASS_TIMEOUT, 's a speed scaling bypass lasts '
                                 'before it re-arms itself (0 < t ≤ 600)'),
        'armnav_urdf': Option(str, None, "the armnav URDF text (default: this checkout's "
                              'urdf/sawyer_armnav.urdf; the robot passes '
                              '/robot/armnav_robot_description)'),
    }
    state_fields = (('min_clearance', 1), ('pair', 2), ('speed_scale', 1), ('bypassed', 1),
                    ('bypass_left', 1))

    def __init__(self, context):
        super().__init__(context)
        option = self.options
        self.bypass_timeout = float(option['bypass_timeout'])
        if not (math.isfinite(self.bypass_timeout) and 0.0 < self.bypass_timeout <= MAX_BYPASS):
            raise ValueError('safety_status bypass_timeout must be in (0, %g] s, got %r'
                             % (MAX_BYPASS, option['bypass_timeout']))
        xml = option['armnav_urdf']
        if xml is None:
            xml = default_armnav_xml()
        self._armnav_model = AvoidanceModel(xml)      # without a tool's shapes
        self._use(self._armnav_model)
        self._scale = 1.0
        self._bypass_left = 0.0

    def _use(self, model):
        self.model = model
        self._pairs = model.candidates                # shape indices, in `pairs` order
        n = len(self._pairs)
        self._per_tick = max(1, -(-n // SWEEP_TICKS))
        self._clearance = np.full(n, np.inf)
        self._next = 0

    def set_tool_shapes(self, shapes):
        self._use(self._armnav_model if shapes is None else self._armnav_model.with_tool(shapes))

    def take(self, command, now, suppressions):
        if command.on:
            suppressions.suppress(BYPASS, now, self.bypass_timeout)
            return True, ('speed scaling bypassed for %g s (safety_status bypass_timeout), '
                          'then re-armed' % self.bypass_timeout)
        suppressions.lift(BYPASS)
        return True, 'speed scaling re-armed'

    def update(self, state, controller, out):
        for k, clearance in self.model.sweep(state.q, state.q_head, self._next, self._per_tick):
            self._clearance[k] = clearance
        self._next = (self._next + self._per_tick) % len(self._pairs)
        self._scale = state.speed_scale
        self._bypass_left = state.suppressions.left(BYPASS, state.now)
        return None

    def reset(self, state):
        self._clearance[:] = np.inf
        self._next = 0
        self._scale = 1.0

    def report(self, put):
        k = int(np.argmin(self._clearance))
        clearance = float(self._clearance[k])
        if math.isfinite(clearance):
            put('min_clearance', clearance)
            put('pair', self._pairs[k])
        else:
            put('min_clearance', math.nan)
            put('pair', (-1.0, -1.0))
        put('speed_scale', self._scale)
        put('bypassed', 1.0 if self._bypass_left > 0.0 else 0.0)
        put('bypass_left', self._bypass_left)
