"""intera_rt: an open re-implementation of the software inside a Rethink Sawyer arm (Intera 5.3), on ROS 1."""
import os

# The models are 8x8: a BLAS thread pool only adds wake-ups, and its spinning threads
# steal the CPU the 1 kHz loop needs. Must be set before numpy is first imported.
for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')
