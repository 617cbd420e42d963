"""PyTorch's DataLoader on the dataset of bench/dataloader_workers_r.R: samples per second over one
epoch after a warm-up epoch, each sample waiting --ms milliseconds, batches of 32.
   python3 bench/torch_dataloader_workers.py [--samples 512] [--ms 2] [--workers 0,1,2,4]"""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowImages(Dataset):
    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        return torch.randn(3, 32, 32), i % 10


def epoch_seconds(dl, samples):
    started = time.perf_counter()
    n = sum(x.shape[0] for x, _ in dl)
    assert n == samples
    return time.perf_counter() - started


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--ms", type=float, default=2)
    p.add_argument("--workers", default="0,1,2,4")
    a = p.parse_args()
    for w in (int(v) for v in a.workers.split(",")):
        # persistent_workers off: each epoch starts its workers, as rcuda's and torch for R's do.
        dl = DataLoader(SlowImages(a.samples, a.ms), batch_size=32, shuffle=True, num_workers=w)
        epoch_seconds(dl, a.samples)
        s = epoch_seconds(dl, a.samples)
        print(f"torch DataLoader workers={w} samples_per_s={a.samples / s:.0f} epoch_s={s:.3f}")


if __name__ == "__main__":
    main()
