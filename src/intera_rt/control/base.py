"""The realtime core's pipeline: what one tick hands its stages, and the stages' interfaces.

One tick (intera_rt.realtime.core.RealtimeCore.tick):

    boards read  → ArmState (measured q, q̇, transmitted torque; time passed in)
    monitors     → Monitor.update: collision detection, ...; a Halt stops the arm
    controller   → Controller.update of the one active controller: an Output (its
                   reference and its torque, gravity left out)
    additive     → Additive.update: gravity compensation, collision avoidance, ... each
                   adds joint torques
    boards write ← the sum, saturated at the effort limits

Stages are pure objects: time comes in ArmState.now, nothing reads a clock. A stage is one
module under control/ plus one line in control.registry; it declares its options (OPTIONS,
checked when it is built: an unknown or mistyped one is refused). The core picks the active
controller by a joint command's mode (Controller.joint_command_mode) or by role (ROLES:
hold, zero_g, interaction), never by name; a monitor or additive that must not act under
some controllers names their roles (idle_roles).
Models: ros2_control's controller `update(time, period)`, dm_control's task hooks.
"""
import math
from dataclasses import dataclass

from intera_rt.options import check_options
from intera_rt.robot import SUPPRESS_WINDOW

# The roles a controller may have (Controller.role): what the core picks it for, or what
# other stages tell apart.
ROLES = {
    'hold': 'where the arm starts and what it falls back to (timeouts, halts, E-stop release)',
    'zero_g': 'what the cuff selects: a person guides the arm',
    'interaction': 'what interaction_control_command selects',
    'planned': 'follows a planned, collision-checked path (TRAJECTORY_MODE)',
}


class CommandRejected(ValueError):
    """A command a stage refused; the message names the field and value at fault, and `kind`
    the sort of problem (a stream of differing bad values is logged as one throttled line
    per kind). The stage's behaviour is left as it was."""

    def __init__(self, text, kind='invalid'):
        super().__init__(text)
        self.kind = kind


class Suppressions:
    """The suppress_* topics: each message suppresses its behaviour for SUPPRESS_WINDOW s,
    so it stays suppressed while they arrive at ≥ 5 Hz (robot.SUPPRESS_TOPICS names them)."""

    def __init__(self):
        self._until = {}

    def suppress(self, what, now, seconds=SUPPRESS_WINDOW):
        """Suppress `what` until `seconds` from now (a bypass of a behaviour, e.g. the
        speed scaling's, is one too: 'speed_scaling')."""
        self._until[what] = now + seconds

    def lift(self, what):
        """`what` is no longer suppressed."""
        self._until.pop(what, None)

    def left(self, what, now):
        """s until `what` is no longer suppressed (0 when it is not)."""
        return max(0.0, self._until.get(what, -math.inf) - now) if self.active(what, now) else 0.0

    def active(self, what, now):
        # (less a nanosecond: loop times are tick counts × 1 ms, and 0.2 s after one must
        # not fall a rounding error short of it)
        until = self._until
        return bool(until) and now < until.get(what, -math.inf) - 1e-9


class ArmState:
    """right_j0..6 as measured at the start of one tick, with the model terms several stages
    need computed once, on first use. Arrays are the tick's own: stages must not write them."""

    __slots__ = ('now', 'period', 'q', 'qd', 'effort', 'q_head', 'qd_head', 'dynamics',
                 'suppressions', 'speed_scale', '_gravity')

    def __init__(self, *, now, period, q, qd, effort, q_head, qd_head, dynamics, suppressions):
        self.now = now                  # s of loop time (sim time under lockstep)
        self.period = period            # s until the next tick
        self.q, self.qd, self.effort = q, qd, effort
        self.q_head, self.qd_head = q_head, qd_head
        self.dynamics = dynamics        # model.dynamics.ArmDynamics
        self.suppressions = suppressions
        # The fraction of their speed the reference-generating controllers may use this
        # tick (speed_scale of the stages; 1 = unscaled).
        self.speed_scale = 1.0
        self._gravity = None

    def gravity(self):
        """The model's gravity torque at q (N·m, 7)."""
        if self._gravity is None:
            self._gravity = self.dynamics.gravity(self.q)
        return self._gravity

    def suppressed(self, what):
        return self.suppressions.active(what, self.now)


class Output:
    """What the active controller commands in one tick. Its arrays belong to it: a
    controller never writes into an Output's arrays after returning it (so the core keeps
    the last one without copying)."""

    __slots__ = ('torque', 'position', 'velocity', 'acceleration', 'effort', 'interaction')

    def __init__(self, torque, position, velocity, acceleration, effort=None, interaction=None):
        self.torque = torque                # N·m to the boards, gravity compensation left out
        # The reference it tracks (SEAJointState commanded_*); the measured state when it
        # tracks none (torque mode, zero-G).
        self.position = position
        self.velocity = velocity
        self.acceleration = acceleration
        # SEAJointState commanded_effort: the user's torques in torque mode; None: the torque
        # the loop sends the boards (gravity and additive torques included, saturated).
        self.effort = effort
        # The part of `torque` that is interaction torque (SEAJointState interaction_torque:
        # the interaction controller's); None: none.
        self.interaction = interaction


@dataclass
class Halt:
    """A monitor's verdict: stop the arm now and hold it for `hold` s, refusing motion
    commands (and zero-G) meanwhile. `compliant`: while the monitor keeps reporting it, the
    hold yields to what pushes the arm (its reference follows the measured pose) instead of
    pressing back. `collision`: it is a detected collision (collision_detection_state is
    true while it holds). `message` is logged (warn) once per halt."""
    kind: str
    message: str
    hold: float
    compliant: bool = False
    collision: bool = True


class PluginContext:
    """What a stage is built from: the robot model, the arm's shared controller settings
    (control.arm.Arm) and the options given (stage name → {key: value}: ROS parameters of
    realtime_loop, ~<stage>/<key>)."""

    def __init__(self, model, arm, options=None):
        self.model = model
        self.arm = arm
        self.options = dict(options or {})

    def options_of(self, stage):
        """Stage class `stage`'s options: every one it declares (OPTIONS), as given
        (checked against its type) or its default. ValueError naming the stage and listing
        its options for one it does not declare."""
        given = check_options('stage %r' % stage.name, stage.OPTIONS,
                              self.options.get(stage.name) or {}, '%s option' % stage.name)
        return {key: given.get(key, opt.default) for key, opt in stage.OPTIONS.items()}


class Stage:
    """What every stage has: a name (its registry key), its options (OPTIONS: name →
    intera_rt.options.Option; their values in self.options once built), the fields it adds
    to the core's state vector (name, size), and a report of them each state period."""
    name = ''
    kind = ''                       # controller, monitor or additive
    OPTIONS = {}
    state_fields = ()

    def __init__(self, context):
        self.context = context
        self.options = context.options_of(type(self))

    def report(self, put):
        """put(field, value) for each of `state_fields`."""

    def reset(self, state):
        """The arm was put somewhere without moving there (boot, brakes released, pose
        reset): drop whatever history the stage keeps."""

    # Typed commands (control.commands classes) this stage takes: the core hands it each
    # one it receives (take), so a plugin with commands of its own is still one module.
    COMMANDS = ()

    def take(self, command, now, suppressions):
        """Apply one of COMMANDS between ticks at loop time `now` (the core's Suppressions
        given: a bypass is one). Returns (success, message)."""
        raise NotImplementedError

    def set_tool(self, tool):
        """The arm carries `tool` (model.tool.Tool; None: nothing) from now on. Stages that
        keep a dynamics model of their own follow it (the shared ArmState.dynamics already
        does)."""

    def set_tool_shapes(self, shapes):
        """The avoidance shapes now include the tool's (model.avoidance.ToolShapes; None:
        the armnav shapes alone). Stages with an avoidance model swap it in, between ticks."""

    def speed_scale(self, state, velocity):
        """The fraction (0..1) of its speed a controller with speed_scaling may use,
        heading for `velocity` (its heading(); e.g. slowing only motion that closes a
        distance to a collision); 1 = no opinion."""
        return 1.0


class Controller(Stage):
    """One of the arm's joint controllers; exactly one is active at a time."""
    kind = 'controller'
    # What the core picks it for, or other stages tell it apart by (ROLES); None: none.
    role = None
    # The JointCommand mode that selects this controller (None: joint_command never does).
    joint_command_mode = None
    # The command timeout applies: with no command for joint_command_timeout s the core
    # exits to hold.
    command_timeout = True
    # Its reference speed follows ArmState.speed_scale (the stages' speed_scale of where
    # it is heading).
    speed_scaling = False
    # JointCommand modes this controller takes as its reference while it is active, instead
    # of handing the arm over to the mode's own controller (which still validates the
    # command): the interaction controller follows a motion's TRAJECTORY_MODE stream.
    reference_modes = ()

    def heading(self):
        """The joint velocity its reference is heading for (7), for speed scaling; None
        when it heads nowhere."""
        return None

    def start(self, state, previous):
        """Become the active controller, continuing without a jump from `previous` (the
        last Output of the controller before; None: from rest at the measured pose)."""

    def validate(self, cmd, state):
        """Check a typed command meant for this controller without acting on it (the core
        switches controllers only for a valid command). Returns (parsed, warnings: list of
        str, e.g. saturations); raises CommandRejected."""
        raise CommandRejected('the %s controller takes no commands' % self.name, 'mode')

    def command(self, parsed, state):
        """Act on a command validate() accepted (this controller is active)."""

    def reference(self, parsed, state):
        """Take a joint command of one of `reference_modes` (as its own controller's
        validate() parsed it) as this controller's reference (this controller is active)."""

    def expected_external_torque(self):
        """The external joint torque (7, N·m, + = what the world applies) this controller
        means the arm to meet: the reaction to the wrench it presses with on purpose, which
        collision detection does not count as a collision. None: none."""
        return None

    def update(self, state):
        """One tick: the Output for this period."""
        raise NotImplementedError


class Monitor(Stage):
    """Watches the arm each tick before the controller runs (collision detection, ...)."""
    kind = 'monitor'
    # The roles of the controllers under which it does not act (it still sees each tick).
    idle_roles = ()

    def update(self, state, controller):
        """A Halt to stop the arm, or None. `controller` is the active one."""
        return None


class Additive(Stage):
    """Adds joint torques to the active controller's (gravity compensation, collision
    avoidance, ...)."""
    kind = 'additive'
    # The roles of the controllers under which it adds nothing.
    idle_roles = ()
    # Its torques go into SEAJointState.interaction_torque (gravity's do not: they have
    # fields of their own).
    interaction = True

    def update(self, state, controller, out):
        """Joint torques (7) to add this tick, or None for none."""
        return None

