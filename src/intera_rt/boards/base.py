"""The joint-boards interface: the realtime loop's hardware abstraction.

Modelled on ros2_control's SystemInterface (a lifecycle; `read(time, period)` and
`write(time, period)` with the time passed in) and on franka_gazebo's FrankaHWSim (a
simulator implements the robot's own interfaces): the core drives every backend — the
embedded plant, MuJoCo, a remote board process, hardware — through this one class.

Declared state, each cycle (BoardsReading): joint positions, velocities, measured
(transmitted) torques, whether the brakes are engaged, the boards' time, and a fault field
('' while the boards are healthy; otherwise the text the robot's error log shows).

Lifecycle:  unconfigured --configure()--> inactive --activate()--> active
            active --deactivate()--> inactive;  any --shutdown()--> finalized
A backend may do all its work in its constructor (the embedded plant does) and have no-op
hooks (on_configure, on_activate, on_deactivate, on_shutdown).

Who owns the clock:
  owns_clock False  a lockstep simulation: the core owns time, `advance(period)` steps the
                    plant once per tick (embedded, MuJoCo).
  owns_clock True   the boards pace the loop (hardware, Gazebo, a remote board process):
                    `wait_cycle()` blocks until their next state, and the core's time
                    follows `BoardsReading.time`; `advance` is refused.
  sim_clock True    (with owns_clock) the boards' time is ROS time: a simulator publishing
                    /clock itself (Gazebo). Loop time is that time, not counted from boot,
                    and the robot publishes no /clock of its own. The state topics go out
                    on the first tick of each STATE_PERIOD of that time (state_slot), so
                    such boards keep that period's first state for the loop even when a
                    newer one comes before the loop takes it.

Sim-only abilities, listed in `capabilities` (CAPABILITIES): teleport (reset_pose),
wrench (apply_wrench), obstacles (add/remove_obstacle, obstacles), contacts,
fault_injection (inject_fault), world (spawned models and the gripper: docs/world.md). A backend without one refuses it with Unsupported, a
NotImplementedError whose message names the backend and the ability.

Backends are listed in intera_rt.boards.registry (make_boards, check_backend); their
options (`OPTIONS`) come from `scripts/sawyer --backend-option KEY=VALUE` or the
realtime_loop's `~backend_options` dictionary.
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from intera_rt.native import kernels
from intera_rt.numeric import clip
from intera_rt.options import Option, parse_option_value  # noqa: F401 (re-exported)
from intera_rt.robot import STATE_PERIOD

# Obstacle shapes and how many size values each takes: a box's 3 full edge lengths, a
# sphere's radius (m).
OBSTACLE_SHAPES = {'box': 3, 'sphere': 1}
MAX_OBSTACLE_SIZE = 10.0     # m: any larger is a typo (mm for m), not a workcell

# The sim-only abilities a backend may have (JointBoards.capabilities).
CAPABILITIES = ('teleport', 'wrench', 'obstacles', 'contacts', 'fault_injection', 'world')
LIFECYCLE = ('unconfigured', 'inactive', 'active', 'finalized')


def state_slot(t):
    """The STATE_PERIOD of time `t` (s) falls in, counted from 0 (a time a hair short of a
    boundary, a float sum of steps, counts as on it)."""
    return math.floor(t / STATE_PERIOD + 1e-6)


class Unsupported(NotImplementedError):
    """A sim-only ability this backend does not have (the message names both)."""


class BoardsError(RuntimeError):
    """The boards could not be configured, activated or driven (the message says why)."""


@dataclass
class BoardsReading:
    """The boards' state at one cycle. Its arrays may be the backend's own: callers must not
    write into them (copy first)."""
    position: np.ndarray   # rad
    velocity: np.ndarray   # rad/s
    effort: np.ndarray     # N·m each joint transmits to its link (SEA deflection on the robot)
    time: float = math.nan  # s: the boards' time of this state (plant time in simulation)
    brakes: bool = True    # engaged: each joint held where it is
    fault: str = ''        # '' healthy; else what is wrong, e.g. 'right_j3 board: over-temperature'


# A backend's option (JointBoards.OPTIONS): the project's declared option (intera_rt.options).
BackendOption = Option


class Obstacle(NamedTuple):
    """A fixed obstacle in the simulated cell, as placed (quaternion normalised)."""
    name: str
    shape: str               # 'box' or 'sphere'
    position: tuple          # m, in base: the box's centre, the sphere's centre
    quaternion: tuple        # x, y, z, w; unit; in base
    size: tuple              # box: 3 full edge lengths along its own axes (m); sphere: (radius,)


class Contact(NamedTuple):
    """One contact between a link of the arm (or head) and an obstacle, at one physics step:
    the simulation's ground truth."""
    obstacle: str            # the obstacle's name
    link: str                # the link whose collision shape touches it, e.g. 'right_hand'
    depth: float             # m the shapes overlap (> 0)
    force: np.ndarray        # N, in base: what the obstacle pushes the link with (along the
                             # contact normal, away from the obstacle; zero while separating)
    point: np.ndarray        # m, in base: the link's point deepest in the obstacle, where
                             # the force acts


class BodyState(NamedTuple):
    """One rigid body of a spawned model (world.RigidBody, named by its root link), in base."""
    model: str
    body: str
    pose: object             # intera_rt.world.Pose
    twist: tuple             # linear xyz (m/s), angular xyz (rad/s), in base


@dataclass(frozen=True)
class GripperCommand:
    """What the gripper device asks of the plant's fingers."""
    separation: float        # m: the target gap between the fingers
    speed: float             # m/s
    force: float             # N: the most the fingers squeeze with


@dataclass(frozen=True)
class GripperState:
    """The plant's fingers as measured."""
    separation: float        # m: the gap between the fingers
    gripping: str = ''       # the model held between them ('' when none)
    force: float = 0.0       # N the fingers squeeze the held model with


def _vector(field, value, n, what):
    """`value` as n finite floats, or ValueError naming the field."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError('obstacle %s must be %s, got %r' % (field, what, value)) from None
    if arr.shape != (n,):
        raise ValueError('obstacle %s must be %s, got %r' % (field, what, value))
    if np.count_nonzero(~np.isfinite(arr)):
        raise ValueError('obstacle %s must be finite, got %r' % (field, arr.tolist()))
    return arr


def check_obstacle(name, shape, position, quaternion, size):
    """Validate add_obstacle's arguments (see JointBoards.add_obstacle) and return the
    Obstacle record, quaternion normalised. ValueError naming field and value otherwise."""
    if not isinstance(name, str) or not name:
        raise ValueError('obstacle name must be a non-empty string, got %r' % (name,))
    if not isinstance(shape, str) or shape not in OBSTACLE_SHAPES:
        raise ValueError('obstacle shape must be one of %s, got %r'
                         % (', '.join(repr(s) for s in OBSTACLE_SHAPES), shape))
    what = ('3 full edge lengths (m)' if shape == 'box' else '[radius] (m)') + ' for a ' + shape
    size = _vector('size', size, OBSTACLE_SHAPES[shape], what)
    if np.count_nonzero(size <= 0.0):
        raise ValueError('obstacle size must be > 0 m, got %r' % (size.tolist(),))
    if np.count_nonzero(size > MAX_OBSTACLE_SIZE):
        raise ValueError('obstacle size must be at most %g m, got %r'
                         % (MAX_OBSTACLE_SIZE, size.tolist()))
    position = _vector('position', position, 3, '3 coordinates (m, in base)')
    quaternion = _vector('quaternion', quaternion, 4, '4 values (x, y, z, w)')
    norm = math.sqrt(float(quaternion @ quaternion))
    if norm < 1e-9:
        raise ValueError('obstacle quaternion must not be zero, got %r' % (quaternion.tolist(),))
    return Obstacle(name, shape, tuple(position.tolist()), tuple((quaternion / norm).tolist()),
                    tuple(size.tolist()))


class JointBoards:
    """The joint boards behind the realtime loop. Joint order is `joint_names`, fixed at
    construction. Subclasses implement read, write, set_brakes and (lockstep) advance or
    (clock-owning) wait_cycle, plus whatever sim-only abilities they list in
    `capabilities`."""

    name = ''                       # the registry key
    joint_names = ()
    simulated = False               # a simulator: the robot offers its sim-control services
    owns_clock = False              # True: the boards pace the loop and their time is its time
    sim_clock = False               # owns_clock, and their time is ROS time: a simulator that
                                    # publishes /clock itself (Gazebo); loop time is that time
    capabilities = frozenset()      # the sim-only abilities it has (CAPABILITIES)
    OPTIONS = {}                    # option name → BackendOption
    # The drives' reflected inertia (armature, kg·m²) the plant really has: None, the robot's
    # (robot.ARMATURE, as the model carries it); a number, every joint's; or {joint: value}.
    # The controllers' gains, the brakes' PD and the momentum observer take it from here
    # (plant_model), never assume the robot's: a plant without drive inertia under gains
    # that count on it is far too stiff for its light wrist.
    plant_armature = None
    # rad: where the plant's mechanical stops are beyond the joint limits (None: the robot's,
    # robot.HARD_STOP_MARGIN); the momentum observer takes a reading on a stop for no push.
    plant_stop_margin = None
    # Ticks a command reaches the plant after the state it answers, beyond a lockstep
    # simulation's (0: stepped with the command of the state it starts from). The controllers
    # keep their damping stable for it (control.arm.Arm's latency).
    plant_latency = 0
    # Why a compiled path of this backend's runs its Python twin instead ('' when it has
    # none, or it runs compiled): the core says it once at boot, as for intera_rt.native.
    native_note = ''

    @classmethod
    def configure_timeout(cls, options):
        """s configure() may wait for something outside (a simulator starting) with these
        options, beyond building the plant: whoever waits for the boards waits this long
        more."""
        return 0.0

    @classmethod
    def plant_model(cls, model):
        """`model` as the plant is: `model` itself when the plant is the robot's (armature,
        stops), else a copy with the plant's (RobotModel.for_plant)."""
        armature, margin = cls.plant_armature, cls.plant_stop_margin
        if armature is None and margin is None:
            return model
        if armature is not None and not isinstance(armature, dict):
            armature = {name: float(armature) for name in model.limits}
        return model.for_plant(armature, margin)

    lifecycle = 'unconfigured'
    brakes = True                   # engaged (every backend starts braked)
    _fault = ''

    # --- lifecycle (ros2_control's) -------------------------------------------------------
    def configure(self):
        """Connect to / build the boards. unconfigured → inactive."""
        self._transition('configure', ('unconfigured',), 'inactive', self.on_configure)

    def activate(self):
        """Start the boards' cycle (commands are taken from now on). inactive → active."""
        self._transition('activate', ('inactive',), 'active', self.on_activate)

    def deactivate(self):
        """Brakes on, zero torque, stop commanding. active → inactive."""
        def hook():
            self.set_brakes(True)
            self.write(np.zeros(len(self.joint_names)))
            self.on_deactivate()
        self._transition('deactivate', ('active',), 'inactive', hook)

    def shutdown(self):
        """Release everything (windows, sockets, processes); from any state, once."""
        if self.lifecycle == 'finalized':
            return
        if self.lifecycle == 'active':
            self.deactivate()
        self.on_shutdown()
        self.lifecycle = 'finalized'

    def _transition(self, what, allowed, to, hook):
        if self.lifecycle not in allowed:
            raise BoardsError('%s: cannot %s from the %s state' % (self.describe(), what, self.lifecycle))
        hook()
        self.lifecycle = to

    def on_configure(self):
        """Hook: build / connect (BoardsError when it cannot)."""

    def on_activate(self):
        """Hook: start the boards' cycle."""

    def on_deactivate(self):
        """Hook: after brakes on and zero torque."""

    def on_shutdown(self):
        """Hook: release resources."""

    def describe(self):
        """How messages name these boards, e.g. 'the mujoco backend'."""
        return 'the %s backend' % (self.name or type(self).__name__)

    # --- the cycle -----------------------------------------------------------------------
    def read(self, time=None, period=None) -> BoardsReading:
        """The latest state (never waits). `time`, `period`: the loop's time of this cycle
        and its period (s), as ros2_control passes them; a backend may log or check them.
        Reading twice without a cycle in between gives the same state."""
        raise NotImplementedError

    def write(self, torque, time=None, period=None):
        """Command one torque per joint (N·m) for the cycle starting at `time` (saturated at
        the effort limits; non-finite values are taken as 0)."""
        raise NotImplementedError

    def set_brakes(self, engaged):
        """Engaged brakes hold each joint where it is, whatever the commanded torque."""
        raise NotImplementedError

    def advance(self, dt):
        """Lockstep simulation: let dt seconds of plant time pass (the core calls it once per
        tick, after write). Boards that own the clock refuse it."""
        raise BoardsError('%s owns the clock: it cannot be advanced' % self.describe())

    def wait_cycle(self, timeout):
        """Boards that own the clock: block until their next state arrives (at most
        `timeout` s); True when one did. A lockstep simulation returns True at once."""
        return True

    # --- faults --------------------------------------------------------------------------
    @property
    def fault(self):
        """'' while healthy; else what is wrong (latched until clear_fault())."""
        return self._fault

    def report_fault(self, text):
        """Backends call this on a fault; the first stays until cleared."""
        if not self._fault:
            self._fault = str(text) or 'unspecified fault'

    def clear_fault(self):
        """Ask the boards to clear a latched fault (the robot's reset does). Returns '' when
        they are healthy again, else why the fault remains."""
        why = self.on_clear_fault()
        if not why:
            self._fault = ''
        return why

    def on_clear_fault(self):
        """Hook: '' when the fault condition is gone, else why it is not."""
        return ''

    def inject_fault(self, text):
        """Simulation: make the boards report `text` as a fault, as a board would."""
        self._require('fault_injection', 'simulate a board fault')
        self.report_fault(text)

    # --- sim-only abilities; a backend without one refuses it -------------------------------
    def _require(self, capability, what):
        if capability not in self.capabilities:
            raise Unsupported('%s cannot %s' % (self.describe(), what))

    def apply_wrench(self, link, wrench, duration):
        """Push `wrench` (force xyz N, torque xyz N·m; in base, about the link origin) on
        `link` for `duration` s. KeyError when there is no such link."""
        self._require('wrench', 'apply external wrenches')

    def clear_wrenches(self, link):
        """Stop the wrenches apply_wrench pushes on `link` (KeyError when there is no such
        link)."""
        self._require('wrench', 'apply external wrenches')

    def reset_pose(self, positions):
        """Teleport: the arm at rest at `positions` (clipped to the limits); drops external
        wrenches, keeps obstacles. Hardware refuses: it boots where the arm is."""
        self._require('teleport', 'be reset to a pose (it boots where the arm is)')

    def add_obstacle(self, name, shape, position, quaternion, size):
        """Place a fixed obstacle in the cell, or move/reshape the one named `name`.

        Args:
            name: non-empty string; adding an existing name replaces that obstacle.
            shape: 'box' or 'sphere'.
            position: 3 floats (m), its centre in base.
            quaternion: 4 floats (x, y, z, w), its orientation in base; a non-unit (non-zero)
                quaternion is normalised.
            size: box: 3 full edge lengths (m) along its own axes; sphere: [radius] (m).
                Each in (0, 10] m.
        ValueError naming field and value on bad input (the cell is left as it was).
        """
        self._require('obstacles', 'place obstacles')

    def remove_obstacle(self, name):
        """Take obstacle `name` out of the cell; KeyError naming it when there is none."""
        self._require('obstacles', 'remove obstacles')

    def obstacles(self):
        """The obstacles in the cell: a list of Obstacle records, in the order first added."""
        self._require('obstacles', 'report obstacles')

    def contacts(self):
        """The contacts of the latest physics step: a list of Contact records."""
        self._require('contacts', 'report contacts')

    def set_tool(self, tool):
        """The arm carries `tool` (model.tool.Tool: its fragment's links grafted on the
        robot's, their mass, inertia and shapes; None: nothing) from now on, where it is,
        at rest as it was. A plant without it refuses (Unsupported): hardware weighs its
        own tool."""
        raise Unsupported('%s cannot carry a tool in its model' % self.describe())

    # --- the world (capability 'world'): every pose and twist in base ------------------------
    def spawn_model(self, model, pose):
        """Place `model` (a validated world.Model; its frame at `pose`, a world.Pose in base)
        with all its bodies (`model.bodies()`), at rest. WorldError naming the element when
        this backend cannot simulate it (nothing changes)."""
        self._require('world', 'spawn models')

    def delete_model(self, name):
        """Take model `name` out of the world; KeyError naming it when there is none."""
        self._require('world', 'delete models')

    def set_model_state(self, name, pose, twist):
        """Put model `name`'s frame at `pose` (base) moving at `twist` (6 floats: linear xyz
        m/s, angular xyz rad/s, base). KeyError naming it when there is none."""
        self._require('world', 'set model states')

    def body_states(self):
        """A BodyState for every body of every spawned model (a tuple)."""
        self._require('world', 'report model states')

    def apply_body_wrench(self, model, body, force, torque, point, duration):
        """Push `force` (N) and `torque` (N·m), base axes, at `point` (m, in the body's frame)
        on `body` of `model` for `duration` s (< 0: until cleared, as gazebo_ros)."""
        self._require('world', 'apply body wrenches')

    def clear_body_wrenches(self, model, body):
        """Drop every wrench applied on `body` of `model`."""
        self._require('world', 'clear body wrenches')

    def set_gripper(self, command):
        """Drive the plant's fingers (a GripperCommand). Only with a gripper on the model."""
        self._require('world', 'drive a gripper')

    def gripper_state(self):
        """The plant's GripperState, or None when the robot's model has no gripper."""
        return None


class SimulatedPlant(JointBoards):
    """Boards whose plant steps in this process (embedded, MuJoCo). Each step replaces its
    state arrays (q, qd, tau_transmitted, time), never writes into them, so a reading needs
    no copies; a command is kept in tau_cmd for the next step, within the effort limits
    (effort_limit, _neg_effort_limit), a non-finite value as 0."""

    simulated = True
    # every sim-only ability but the world, which a plant adds when it implements it
    capabilities = frozenset(CAPABILITIES) - {'world'}

    def _init_plant(self, model, joint_names):
        """The state both plants start from: joints at 0, at rest, nothing commanded, the
        brakes on, plant time 0; the joints' limits. Returns model.limit_arrays of them."""
        self.joint_names = tuple(joint_names)
        lim = model.limit_arrays(self.joint_names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.effort_limit = lim['effort']
        self._neg_effort_limit = -self.effort_limit
        n = len(self.joint_names)
        self.q = np.zeros(n)
        self.qd = np.zeros(n)
        self.tau_cmd = np.zeros(n)
        self.tau_transmitted = np.zeros(n)
        self.brakes = True
        self.time = 0.0                            # s of plant time
        return lim

    def read(self, time=None, period=None):
        return BoardsReading(self.q, self.qd, self.tau_transmitted, self.time, self.brakes,
                             self._fault)

    def write(self, torque, time=None, period=None):
        safe = None if kernels is None else kernels.safe_torque(torque, self._neg_effort_limit,
                                                                self.effort_limit)
        if safe is not None:
            self.tau_cmd = safe
            return
        torque = np.asarray(torque, dtype=float)
        # Never let a bad number into the plant. (The squares' sum is inf or nan if any is;
        # a huge finite torque overflowing it only takes the exact path.)
        if not math.isfinite(torque.dot(torque)):
            torque = np.where(np.isfinite(torque), torque, 0.0)
        self.tau_cmd = clip(torque, self._neg_effort_limit, self.effort_limit)
