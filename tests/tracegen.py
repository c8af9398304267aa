"""Large din traces written with numpy (a Python loop per line would take minutes)."""
import numpy as np

_HEXDIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def write_din_lines(path, n_blocks, block=1 << 20, addr_bits=32, seed=0):
    """n_blocks * block lines "L AAAAAAAA 8": label 0 (load) or 1 (store), 8 hex digits of a
    random address below 2**addr_bits (at most 32), size 8."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        for _ in range(n_blocks):
            m = np.empty((block, 13), dtype=np.uint8)
            m[:, 0] = ord("0") + rng.integers(0, 2, block)
            m[:, 1] = m[:, 10] = ord(" ")
            addr = rng.integers(0, 1 << addr_bits, block) & ~7
            m[:, 2:10] = _HEXDIGITS[(addr[:, None] >> np.arange(28, -4, -4)) & 15]
            m[:, 11] = ord("8")
            m[:, 12] = ord("\n")
            f.write(m.tobytes())
