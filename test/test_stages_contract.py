"""The stage contract (intera_rt.control), for every registered stage, no ROS: a name and a
kind, declared options (typed, with defaults and help) that it builds with and that refuse a
key it does not declare or a value of the wrong type, a role from control.base.ROLES (the
core picks controllers by role), state fields it reports as declared, and one tick on an arm
at rest at neutral without error — as test_boards_contract does for the backends."""
import math

import numpy as np
import pytest

from intera_rt.control.arm import Arm
from intera_rt.control.base import (ROLES, Additive, ArmState, Controller, Monitor,
                                    Output, PluginContext, Suppressions)
from intera_rt.control.registry import (ADDITIVES, CONTROLLERS, MONITORS, STAGES,
                                        check_stage_options)
from intera_rt.model import RobotModel
from intera_rt.options import Option, per_joint
from intera_rt.realtime.core import PERIOD, RealtimeCore
from intera_rt.robot import NEUTRAL

KINDS = {'controller': (Controller, CONTROLLERS), 'monitor': (Monitor, MONITORS),
         'additive': (Additive, ADDITIVES)}
# A value of the wrong type for an option of each type.
WRONG = {bool: 'maybe', int: 2.5, float: 'fast', str: 5}


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture(scope='module')
def arm(model):
    return Arm(model)


def context(model, arm, options=None):
    return PluginContext(model, arm, options)


def neutral_state(arm, now=0.0):
    """The arm at rest at neutral: each joint transmits its gravity torque."""
    q = np.array(NEUTRAL, float)
    return ArmState(now=now, period=PERIOD, q=q, qd=np.zeros(7),
                    effort=arm.dynamics.gravity(q), q_head=0.0, qd_head=0.0,
                    dynamics=arm.dynamics, suppressions=Suppressions())


@pytest.fixture(params=sorted(STAGES), scope='module')
def stage(request):
    return STAGES[request.param]


def test_registry_names_each_stage_once():
    listed = MONITORS + ADDITIVES + CONTROLLERS
    assert len({s.name for s in listed}) == len(listed) == len(STAGES)


def test_name_and_kind(stage):
    assert stage.name and stage.name == stage.name.strip() and STAGES[stage.name] is stage
    base, listed = KINDS[stage.kind]
    assert issubclass(stage, base) and stage in listed


def test_declared_options(stage):
    for key, opt in stage.OPTIONS.items():
        assert isinstance(opt, Option) and key.isidentifier(), key
        assert opt.type in (bool, int, float, str), (key, opt.type)
        assert opt.default is None or type(opt.default) is opt.type, (key, opt.default)
        assert opt.help.strip(), key


def test_builds_with_its_defaults(stage, model, arm):
    built = stage(context(model, arm))
    assert built.name == stage.name
    assert built.options == {key: opt.default for key, opt in stage.OPTIONS.items()}


def test_refuses_an_unknown_option(stage, model, arm):
    with pytest.raises(ValueError) as err:
        stage(context(model, arm, {stage.name: {'no_such_option': 1.0}}))
    assert str(err.value) == "stage %r takes no option 'no_such_option'; its options: %s" % (
        stage.name, ', '.join(sorted(stage.OPTIONS)) or 'none')


def test_refuses_a_mistyped_option(stage, model, arm):
    for key, opt in stage.OPTIONS.items():
        with pytest.raises(ValueError) as err:
            stage(context(model, arm, {stage.name: {key: WRONG[opt.type]}}))
        assert '%s option %s' % (stage.name, key) in str(err.value)
        assert repr(WRONG[opt.type]) in str(err.value)


def test_role(stage):
    if stage.kind == 'controller':
        assert stage.role is None or stage.role in ROLES
    else:
        assert set(stage.idle_roles) <= set(ROLES), stage.idle_roles


def test_controller_roles_are_unique_and_the_core_has_a_hold():
    roles = [c.role for c in CONTROLLERS if c.role is not None]
    assert len(roles) == len(set(roles))
    assert {'hold', 'zero_g', 'interaction'} <= set(roles)


def test_ticks_once_at_rest_and_reports_its_fields(stage, model, arm):
    built = stage(context(model, arm))
    hold = STAGES['hold'](context(model, arm))
    state = neutral_state(arm)
    hold.start(state, None)
    built.reset(state)
    for k in range(2):                       # a monitor's first reading only starts it
        state = neutral_state(arm, k * PERIOD)
        if stage.kind == 'controller':
            if k == 0:
                built.start(state, None)
            out = built.update(state)
            assert isinstance(out, Output)
            for a in (out.torque, out.position, out.velocity, out.acceleration):
                assert np.shape(a) == (7,) and np.isfinite(a).all()
        elif stage.kind == 'monitor':
            assert built.update(state, hold) is None, 'a halt for an arm at rest'
        else:
            extra = built.update(state, hold, hold.update(state))
            assert extra is None or (np.shape(extra) == (7,) and np.isfinite(extra).all())
        assert 0.0 <= built.speed_scale(state, np.full(7, 0.1)) <= 1.0
    got = {}
    built.report(lambda key, value: got.__setitem__(key, np.atleast_1d(value)))
    assert {k: len(v) for k, v in got.items()} == dict(stage.state_fields)


def test_check_stage_options_types_them_and_names_the_stages():
    assert check_stage_options({'collision_detection': {'squish_threshold': '15', 'hold': 1},
                                'collision_avoidance': {'velocity_scaling': 'true'}}) == {
        'collision_detection': {'squish_threshold': 15.0, 'hold': 1.0},
        'collision_avoidance': {'velocity_scaling': True}}
    with pytest.raises(ValueError, match="unknown stage 'colision_detection'; stages: "
                                         + ', '.join(sorted(STAGES))):
        check_stage_options({'colision_detection': {}})
    with pytest.raises(ValueError, match="collision_avoidance option velocity_scaling must be "
                                         "true or false, got 'maybe'"):
        check_stage_options({'collision_avoidance': {'velocity_scaling': 'maybe'}})


def test_per_joint_values():
    assert per_joint('x', 2) == 2.0
    assert per_joint('x', '1,2,3,4,5,6,7') == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    assert per_joint('x', {'right_j5': '3'}) == {'right_j5': 3.0}
    for value, words in [(0.0, ('x', '0.0')), ([1.0] * 6, ('x', '7', '6')),
                         ({'right_j9': 1.0}, ('right_j9',)), ('big', ('x', "'big'")),
                         ([1, 1, 1, math.inf, 1, 1, 1], ('x[right_j3]', 'inf'))]:
        with pytest.raises(ValueError) as err:
            per_joint('x', value)
        assert all(w in str(err.value) for w in words), str(err.value)


def test_the_core_refuses_a_misspelt_option(model):
    with pytest.raises(ValueError, match="stage 'collision_detection' takes no option "
                                         "'impact_treshold'; its options: hold, impact_scale"):
        RealtimeCore(model, options={'collision_detection': {'impact_treshold': 0.5}})


def test_the_core_picks_controllers_by_role(model):
    core = RealtimeCore(model)
    assert core.hold.role == 'hold' and core.active is core.hold
    assert core.zero_g.role == 'zero_g' and core.interaction.role == 'interaction'
