"""The speed scaling's status and its bypass (beyond the robot, after seed 002's safety
controller status): what /intera_rt/safety_status reports, and a bypass of the speed
scaling that re-arms itself.

Status: the minimum clearance (m; < 0 an overlap beyond the pair's rest-pose allowance) over
the pairs of armnav shapes collision avoidance watches, and that pair, at the last tick's
pose; the speed scale the position and velocity controllers were allowed that tick
(ArmState.speed_scale: the smaller of --velocity-scaling's and high-speed scaling's; 1 =
unscaled). The nearest pair is found when a state is reported (every 10 ms), not on every
tick: each pair keeps a lower bound on its clearance (its last clearance less what the
joints' travel since could have closed of it, model.closing × Σ|Δq|), and only the pairs
whose bound does not exceed the nearest found are looked at (a held arm: one or two of 54);
a pose the last sweep was made at (a held arm at rest, to the bit) gives that sweep's result
again, as a new sweep would.

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
from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml, joint_travel
from intera_rt.options import Option

BYPASS_TIMEOUT = 60.0          # s (seed 002's safety_bypass_timeout default)
MAX_BYPASS = 600.0             # s (seed 002's bound)
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
        self._bypass = None                           # (suppressions, now) of the last tick

    def _use(self, model):
        self.model = model
        self._pairs = model.candidates                # shape indices, in `pairs` order
        self._forget()

    def _forget(self):
        """No pose seen yet, nothing known of any pair."""
        self._q = None                                # the last tick's arm and head angles
        self._head = 0.0
        self._bounds = np.full(len(self._pairs), -np.inf)   # m, at self._bound_q
        self._bound_q, self._bound_head = None, 0.0
        self._nearest = None                          # (pair, clearance) at self._q, once found
        self._swept = None                            # (pair, clearance) at self._bound_q

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
        if self._q is None:
            self._q = state.q.copy()
        else:
            np.copyto(self._q, state.q)
        self._head = state.q_head
        self._nearest = None
        self._scale = state.speed_scale
        self._bypass = state.suppressions, state.now  # (what is left of it: when reported)
        return None

    def reset(self, state):
        self._forget()
        self._scale = 1.0

    def _find_nearest(self):
        """(pair index, clearance) at the last tick's pose; the bounds follow it there."""
        q, head, bounds = self._q, self._head, self._bounds
        if self._bound_q is None:
            self._bound_q = q.copy()
        else:
            travel = joint_travel(q, self._bound_q) + abs(head - self._bound_head)
            if travel == 0.0 and self._swept is not None:
                return self._swept                    # (the same pose: the same answer)
            if travel > 0.0:
                bounds -= self.model.closing * travel
            np.copyto(self._bound_q, q)
        self._bound_head = head
        self._swept = self.model.nearest(q, head, bounds)
        return self._swept

    def report(self, put):
        if self._q is not None and self._nearest is None:
            self._nearest = self._find_nearest()
        k, clearance = self._nearest or (0, math.inf)
        if math.isfinite(clearance):
            put('min_clearance', clearance)
            put('pair', self._pairs[k])
        else:
            put('min_clearance', math.nan)
            put('pair', (-1.0, -1.0))
        put('speed_scale', self._scale)
        left = 0.0 if self._bypass is None else self._bypass[0].left(BYPASS, self._bypass[1])
        put('bypassed', 1.0 if left > 0.0 else 0.0)
        put('bypass_left', left)
