"""scripts/bench's guard: the in-run ratios from the sections' results, each judged against
its target; a section not run leaves its ratios out."""
from intera_rt.bench.__main__ import GUARD, guard


def _report(tick_over_plant=1.8, p99=420.0, overruns=3, empty=5, lockstep=30.0, python_s=0.25,
            joint_states_hz=99.5):
    return {'plugins': {'tick_over_plant': tick_over_plant, 'floor_over_plant': 1.5},
            'realtime': {'tick': {'p99_us': p99, 'overruns': overruns},
                         'platform': {'overruns': empty, 'python_1e7_additions_s': python_s},
                         'lockstep': {'speedup': lockstep,
                                      'state_rates_hz': {'/robot/joint_states': joint_states_hz,
                                                         '/robot/state': 100.0},
                                      'cpu_per_sim_s': {'core': 0.05, 'motion_controller': 0.0123,
                                                        'io': 0.004}}}}


def test_every_ratio_passes_within_its_target():
    g = guard(_report())
    assert set(g) == set(GUARD)
    assert all(r['pass'] for r in g.values() if r['target'] is not None), g
    # the compiled floor is information: no target, no verdict
    assert g['floor_over_plant'] == {'value': 1.5, 'target': None, 'pass': None,
                                     'what': GUARD['floor_over_plant'][0]}
    assert g['overruns_over_empty_loop']['value'] == -2
    assert g['lockstep_python_s']['value'] == 7.5
    # the slowest state topic counts; the nodes' CPU is information (ms per sim s)
    assert g['lockstep_state_rate']['value'] == 0.995
    assert (g['lockstep_motion_controller_cpu']['value'], g['lockstep_io_cpu']['value']) == (12.3, 4.0)
    assert g['lockstep_io_cpu']['pass'] is None


def test_each_ratio_fails_beyond_its_target():
    g = guard(_report(tick_over_plant=2.4, p99=501.0, overruns=6, empty=5, lockstep=20.0,
                      joint_states_hz=94.0))
    assert not any(r['pass'] for r in g.values() if r['target'] is not None), g


def test_sections_not_run_leave_their_ratios_out():
    assert set(guard({'plugins': {'tick_over_plant': 1.0}})) == {'tick_over_plant'}
    assert guard({}) == {}
