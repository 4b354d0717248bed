"""The greedy non-maximum suppression loop of contrib.Proposal / MultiProposal, compiled by Numba: MXNet's
O(n * kept) loop over up to rpn_pre_nms_top_n boxes is ~100x slower as numpy passes (one per kept box).
proposal.py imports this module on first use, so `import mixnet` does not pay for importing Numba; `cache=True`
keeps the machine code on disk."""
import numpy as np
from numba import njit


@njit(cache=True)
def nms(dets, threshold, limit):
    """Indices of the boxes greedy NMS keeps (at most `limit`), in order: dets (n, >= 4) float32 sorted by score;
    a later box is dropped when its IoU (areas with +1 pixel) with a kept one exceeds threshold."""
    n = dets.shape[0]
    one, zero = np.float32(1), np.float32(0)
    area = np.empty(n, np.float32)
    for i in range(n):
        area[i] = (dets[i, 2] - dets[i, 0] + one) * (dets[i, 3] - dets[i, 1] + one)
    suppressed = np.zeros(n, np.bool_)
    keep = np.empty(min(n, limit), np.int64)
    count = 0
    for i in range(n):
        if count >= limit:
            break
        if suppressed[i]:
            continue
        keep[count] = i
        count += 1
        for j in range(i + 1, n):
            if suppressed[j]:
                continue
            w = max(zero, min(dets[i, 2], dets[j, 2]) - max(dets[i, 0], dets[j, 0]) + one)
            h = max(zero, min(dets[i, 3], dets[j, 3]) - max(dets[i, 1], dets[j, 1]) + one)
            inter = w * h
            if inter / (area[i] + area[j] - inter) > threshold:
                suppressed[j] = True
    return keep[:count]
