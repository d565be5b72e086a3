# SPDX-License-Identifier: Apache-2.0
"""A ConfigMap volume laid out as the kubelet lays it out, and updated as it updates it.

DIR/..TIMESTAMP/KEY holds the data, DIR/..data -> ..TIMESTAMP, DIR/KEY -> ..data/KEY. An update writes a
new timestamped directory, points DIR/..data_tmp at it, renames that over DIR/..data (the one atomic
step: a reader sees all old or all new files) and removes the old directory. No signal is sent.
"""
import os
import shutil
import time


class KubeletVolume:
    def __init__(self, directory, data):
        self.dir = directory
        self.current = None
        self.generation = 0
        os.makedirs(directory, exist_ok=True)
        self.update(data)
        for key in data:
            os.symlink(os.path.join("..data", key), os.path.join(directory, key))

    def update(self, data):
        self.generation += 1
        version = time.strftime("..%Y_%m_%d_%H_%M_%S.") + str(self.generation)
        os.mkdir(os.path.join(self.dir, version))
        for key, text in data.items():
            with open(os.path.join(self.dir, version, key), "w") as f:
                f.write(text)
        tmp = os.path.join(self.dir, "..data_tmp")
        os.symlink(version, tmp)
        os.rename(tmp, os.path.join(self.dir, "..data"))
        if self.current:
            shutil.rmtree(os.path.join(self.dir, self.current))
        self.current = version
