"""local_rank_id: rank 0 reads the input once and feeds the listed local ranks over the tf.data service.

argv: STEPS LOCAL_DEVICE_LIST. Builds NPURunConfig(local_rank_id=0, local_device_list=...) and its
session plan (which activates the options), then `feed.apply` on a dataset whose map step logs
(pid, element) for every element it reads. Each rank fetches STEPS batches and writes them.
"""
import os
import sys

from common import OUT, tf, write

from npurun import NPURunConfig
from npurun.distribute import cluster, feed
from npurun.runtime.contributors import build_plan

steps, devices = int(sys.argv[1]), sys.argv[2]
build_plan(NPURunConfig(local_rank_id=0, local_device_list=devices).options, "train")
log = OUT / "reads.log"


def record(x):
    with open(log, "a") as handle:
        handle.write(f"{os.getpid()} {int(x)}\n")
    return x


dataset = tf.data.Dataset.range(1000).map(lambda x: tf.numpy_function(record, [x], tf.int64)).repeat().batch(3)
fed = feed.apply(dataset)
batch = tf.compat.v1.data.make_one_shot_iterator(fed).get_next()
done = cluster.barrier_op(60)  # the feeding rank must outlive the others' last read
session = cluster.create_session()
batches = [session.run(batch).tolist() for _ in range(steps)]
session.run(done)
write({"pid": os.getpid(), "batches": batches, "fed": fed is not dataset})
