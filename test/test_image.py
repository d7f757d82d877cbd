"""The container image (scripts/image) and the Kubernetes manifests (deploy/), with podman.

Slow (the image is built from Debian packages and PyPI: ~10 minutes on a busy machine, the
whole file ~13), so it runs only when asked:

    scripts/test --slow test/test_image.py       (or INTERA_RT_SLOW=1)

(INTERA_RT_IMAGE_REUSE=1 tests the image the last scripts/image built instead of building it;
needs root and `apt-get install mmdebstrap podman runc catatonit`). podman is configured by
deploy/containers.conf (cgroupfs, runc, no default ulimits). Every container runs with the host's
network, each robot's master on a free port (SAWYER_MASTER_PORT), and is talked to from outside
the container, as a user's SDK script would: rostopic, an FK/IK client, the episode program of
deploy/job.yaml, scripts/fleet's client.

podman 4.3 plays Pods and Deployments but neither Jobs nor native sidecars: the Job test makes
each index's Pod as Kubernetes' Job controller would (the robot sidecar a plain container, the
index in JOB_COMPLETION_INDEX) and plays those.
"""
import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

if os.environ.get('INTERA_RT_SLOW', '') in ('', '0'):
    pytest.skip('slow (builds the container image): run with scripts/test --slow',
                allow_module_level=True)

import signal                                   # noqa: E402

from intera_rt.tooling.robot_process import free_port   # noqa: E402
from rosharness import wait_for                 # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ENV = str(REPO / 'scripts' / 'env')
TAG = 'localhost/intera_rt:latest'
BOOT_TIMEOUT = 180.0
BUILD_TIMEOUT = 2700.0      # s: mmdebstrap and podman on a busy 2-core machine (~13 min seen)
# pytest-timeout's 300 s per test would cut the image build (in the first test's setup) short.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + 600)
PODMAN_ENV = dict(os.environ, CONTAINERS_CONF=str(REPO / 'deploy' / 'containers.conf'))

IK_CLIENT = r'''
import sys, rospy
from geometry_msgs.msg import PoseStamped
from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
from intera_core_msgs.srv import SolvePositionIK, SolvePositionIKRequest
from sensor_msgs.msg import JointState
rospy.init_node('image_ik_client', anonymous=True)
ns = '/ExternalTools/right/PositionKinematicsNode/'
rospy.wait_for_service(ns + 'FKService', 60)
names = ['right_j%d' % i for i in range(7)]
seed = [0.3, -0.9, 0.1, 1.8, 0.2, 0.6, 3.3]
fk = rospy.ServiceProxy(ns + 'FKService', SolvePositionFK)(SolvePositionFKRequest(
    configuration=[JointState(name=names, position=seed)], tip_names=['right_hand']))
assert fk.isValid[0], fk
target = PoseStamped(pose=fk.pose_stamp[0].pose)
target.header.frame_id = 'base'
ik = rospy.ServiceProxy(ns + 'IKService', SolvePositionIK)(SolvePositionIKRequest(
    pose_stamp=[target], tip_names=['right_hand']))
assert ik.result_type[0] > 0, 'IK failed: %s' % ik.result_type[0]
back = rospy.ServiceProxy(ns + 'FKService', SolvePositionFK)(SolvePositionFKRequest(
    configuration=[ik.joints[0]], tip_names=['right_hand']))
p, q = back.pose_stamp[0].pose.position, target.pose.position
err = ((p.x - q.x) ** 2 + (p.y - q.y) ** 2 + (p.z - q.z) ** 2) ** 0.5
assert err < 1e-3, 'IK solution lands %.4f m off' % err
print('IK solved: position error %.2e m' % err)
'''


def podman(*args, check=True, timeout=600):
    proc = subprocess.run(['podman'] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout, env=PODMAN_ENV)
    if check and proc.returncode != 0:
        raise AssertionError('podman %s failed (%d):\n%s' % (' '.join(args), proc.returncode,
                                                            proc.stdout[-3000:]))
    return proc


def ros(master_uri, *argv, timeout=120):
    """argv in the project environment against master_uri, from outside any container."""
    env = dict(os.environ, ROS_MASTER_URI=master_uri, ROS_IP='127.0.0.1')
    return subprocess.run([ENV] + list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env=env)


def robot_state_answers(master_uri):
    proc = ros(master_uri, 'timeout', '20', 'rostopic', 'echo', '-n', '1', '--noarr',
               '/robot/state', timeout=60)
    return proc.returncode == 0 and 'enabled: True' in proc.stdout


@pytest.fixture(scope='module')
def image():
    for tool in ('mmdebstrap', 'podman', 'runc', 'catatonit'):
        assert shutil.which(tool), \
            '%s missing: apt-get install mmdebstrap podman runc catatonit' % tool
    if os.environ.get('INTERA_RT_IMAGE_REUSE', '') not in ('', '0'):
        return json.loads((REPO / 'build' / 'image' / 'image.json').read_text())
    # its own process group: a failed or cut-short build leaves no mmdebstrap running
    proc = subprocess.Popen([str(REPO / 'scripts' / 'image')], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=PODMAN_ENV,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BUILD_TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
    assert proc.returncode == 0, out[-3000:]
    info = json.loads((REPO / 'build' / 'image' / 'image.json').read_text())
    assert 'MB in' in out                         # the size is reported
    return info


def test_image_runs_as_a_user_with_a_health_check(image):
    assert image['size_bytes'] > 100e6
    inspect = json.loads(podman('image', 'inspect', TAG).stdout)[0]
    config = inspect['Config']
    assert config['User'] == 'sawyer'
    assert config['Entrypoint'] == ['/opt/intera_rt/scripts/sawyer']
    assert inspect['Healthcheck']['Test'] == ['CMD', '/opt/intera_rt/deploy/healthcheck']


def test_container_robot_answers_state_and_ik_from_outside(image):
    port = free_port()
    name = 'intera_rt_test_%d' % port
    podman('run', '-d', '--rm', '--network', 'host', '--name', name,
           '-e', 'SAWYER_MASTER_PORT=%d' % port, '-e', 'SAWYER_SIM_TIME=true',
           '-e', 'SAWYER_GRIPPER=true', TAG)
    uri = 'http://127.0.0.1:%d' % port
    try:
        wait_for(lambda: robot_state_answers(uri), BOOT_TIMEOUT, '/robot/state from %s' % name)
        ik = ros(uri, 'python', '-c', IK_CLIENT)
        assert ik.returncode == 0 and 'IK solved' in ik.stdout, ik.stdout
        assert podman('healthcheck', 'run', name, check=False).returncode == 0
        users = podman('top', name, 'user', 'args').stdout.splitlines()[1:]
        assert users and all(line.split()[0] == 'sawyer' for line in users), users
        assert '/io/end_effector/right_gripper' in ros(uri, 'rostopic', 'list').stdout
    finally:
        podman('stop', '-t', '20', name, check=False)
    assert name not in podman('ps', '-a', '--format', '{{.Names}}').stdout


def _with_port(doc, port):
    """The manifest for the host's network, which each pod has here: every
    SAWYER_MASTER_PORT set to `port`, ROS_IP (the pod IP in a cluster) to loopback, and no
    container ports (podman maps them only on a pod network)."""
    doc = copy.deepcopy(doc)
    spec = doc['spec']['template']['spec']
    for c in spec.get('containers', []) + spec.get('initContainers', []):
        c.pop('ports', None)
        env = [e for e in c.get('env', []) if e['name'] not in ('SAWYER_MASTER_PORT', 'ROS_IP')]
        c['env'] = env + [{'name': 'SAWYER_MASTER_PORT', 'value': str(port)},
                          {'name': 'ROS_IP', 'value': '127.0.0.1'}]
    return doc


def test_kube_play_deployment_serves_a_robot(image, tmp_path):
    docs = list(yaml.safe_load_all((REPO / 'deploy' / 'robot.yaml').read_text()))
    deployment = next(d for d in docs if d['kind'] == 'Deployment')
    port = free_port()
    path = tmp_path / 'robot.yaml'
    path.write_text(yaml.safe_dump(_with_port(deployment, port)))
    podman('kube', 'play', '--network', 'host', str(path))
    uri = 'http://127.0.0.1:%d' % port
    try:
        wait_for(lambda: robot_state_answers(uri), BOOT_TIMEOUT, '/robot/state of the pod')
        ik = ros(uri, 'python', '-c', IK_CLIENT)
        assert ik.returncode == 0 and 'IK solved' in ik.stdout, ik.stdout
    finally:
        podman('kube', 'down', str(path), check=False)
    assert 'sawyer' not in podman('pod', 'ps', '--format', '{{.Name}}').stdout


def job_pods(job, ports):
    """The Pods Kubernetes' Job controller makes of an Indexed Job, one per index, the
    native sidecar (initContainers with restartPolicy Always) as a plain container."""
    pods = []
    for index, port in enumerate(ports):
        spec = copy.deepcopy(_with_port(job, port)['spec']['template']['spec'])
        sidecars = spec.pop('initContainers', [])
        for c in sidecars:
            assert c.pop('restartPolicy') == 'Always'
            c.pop('startupProbe', None)          # podman: the episode waits for the robot
        spec['containers'] = sidecars + spec['containers']
        for c in spec['containers']:
            c['env'] = c.get('env', []) + [{'name': 'JOB_COMPLETION_INDEX',
                                            'value': str(index)}]
        pods.append({'apiVersion': 'v1', 'kind': 'Pod',
                     'metadata': {'name': '%s-%d' % (job['metadata']['name'], index)},
                     'spec': spec})
    return pods


def test_kube_play_indexed_job_runs_each_episode_against_its_own_robot(image, tmp_path):
    job = yaml.safe_load((REPO / 'deploy' / 'job.yaml').read_text())
    assert job['spec']['completionMode'] == 'Indexed'
    ports = [free_port() for _ in range(job['spec']['completions'])]
    path = tmp_path / 'job_pods.yaml'
    pods = job_pods(job, ports)
    path.write_text(yaml.safe_dump_all(pods))
    podman('kube', 'play', '--network', 'host', str(path))
    try:
        results = {}
        for index, pod in enumerate(pods):
            name = pod['metadata']['name'] + '-episode'
            code = podman('wait', name, timeout=BOOT_TIMEOUT + 120).stdout.strip()
            results[index] = (int(code), podman('logs', name).stdout)
    finally:
        podman('kube', 'down', str(path), check=False)
    for index, (code, output) in results.items():
        assert code == 0, output
        assert 'robot %d on http://127.0.0.1:%d: right_j0' % (index, ports[index]) in output, \
            output


def test_fleet_of_container_robots_runs_the_client_on_each(image, tmp_path):
    logs = tmp_path / 'fleet'
    proc = subprocess.run([str(REPO / 'scripts' / 'fleet'), '2', '--image', TAG, '--logs',
                           str(logs), '--', 'python', str(REPO / 'test' / 'fleet_client.py')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, env=PODMAN_ENV)
    assert proc.returncode == 0, proc.stdout
    robots = json.loads((logs / 'fleet.json').read_text())['robots']
    for r in robots:
        assert r['status'] == 'ok'
        assert 'robot %d on %s: right_j0' % (r['index'], r['master_uri']) in \
            Path(r['cmd_log']).read_text()
    assert 'intera_rt_fleet_' not in podman('ps', '-a', '--format', '{{.Names}}').stdout
