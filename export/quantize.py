"""Blockwise weight quantization in numpy, in the layout of onnxruntime's ``MatMulNBits``.

A weight ``W`` of shape ``[N, K]`` (Hugging Face ``[out, in]``) is cut into blocks of
``block`` consecutive input features per output row. Each block gets one fp32 scale and, when
asymmetric, one integer zero point; the dequantized weight is ``(q - zero_point) * scale``.

- symmetric (no zero points stored; onnxruntime's default zero point is 2^(bits-1)): the block's
  largest-magnitude value maps to the most negative code, so the full signed range is used;
- asymmetric: [min(block, 0), max(block, 0)] is spread over all 2^bits codes.

Packed layout: ``B`` is uint8 ``[N, K/block, block*bits/8]`` (4 bits: low nibble first), scales
are fp32 ``[N, K/block]``, 4-bit zero points are packed two blocks per byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK_ROWS = 4096

@dataclass
class Quantized:
    """A blockwise-quantized matrix in MatMulNBits layout."""

    packed: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray | None
    bits: int
    block: int

    @property
    def shape(self) -> tuple[int, int]:
        """(N, K) of the matrix it stands for."""
        n, blocks, _ = self.packed.shape
        return n, blocks * self.block

    def dequantize(self) -> np.ndarray:
        """The fp32 matrix these codes stand for (for checks)."""
        codes = unpack(self.packed, self.bits).astype(np.float32)
        zero = 2.0 ** (self.bits - 1) if self.zero_points is None else \
            unpack_zero_points(self.zero_points, self.bits, codes.shape[1])[..., None]
        return ((codes - zero) * self.scales[..., None]).reshape(self.shape)


def quantize(weight: np.ndarray, bits: int, block: int = 32, symmetric: bool = True) -> Quantized:
    """Quantize ``weight`` [N, K] to ``bits`` (4 or 8) per block of ``block`` input features.

    Rows go ``CHUNK_ROWS`` at a time (every block is quantized on its own, so the codes are the
    same): the temporaries stay a few MiB instead of several copies of a large table.
    """
    n, k = weight.shape
    if k % block:
        raise ValueError(f"input size {k} is not a multiple of the block size {block}")
    parts = [_quantize_rows(weight[i:i + CHUNK_ROWS], bits, block, symmetric)
             for i in range(0, n, CHUNK_ROWS)]
    if len(parts) == 1:
        return parts[0]
    zero_points = None if symmetric else np.concatenate([p.zero_points for p in parts])
    return Quantized(np.concatenate([p.packed for p in parts]),
                     np.concatenate([p.scales for p in parts]), zero_points, bits, block)


def _quantize_rows(weight: np.ndarray, bits: int, block: int, symmetric: bool) -> Quantized:
    n, k = weight.shape
    blocks = weight.astype(np.float32).reshape(n, k // block, block)
    top = (1 << bits) - 1
    if symmetric:
        index = np.abs(blocks).argmax(axis=-1)[..., None]
        extreme = np.take_along_axis(blocks, index, axis=-1)[..., 0]
        scales = extreme / -(1 << (bits - 1))
        scales[scales == 0] = 1.0
        zero = np.full(scales.shape, 1 << (bits - 1), dtype=np.float32)
    else:
        low = np.minimum(blocks.min(axis=-1), 0.0)
        high = np.maximum(blocks.max(axis=-1), 0.0)
        scales = (high - low) / top
        scales[scales == 0] = 1.0
        zero = np.clip(np.round(-low / scales), 0, top)
    codes = np.clip(np.round(blocks / scales[..., None]) + zero[..., None], 0, top).astype(np.uint8)
    zero_points = None if symmetric else pack_zero_points(zero.astype(np.uint8), bits)
    return Quantized(pack(codes, bits), scales.astype(np.float32), zero_points, bits, block)


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """uint8 codes [..., block] -> bytes [..., block*bits/8] (4 bits: two per byte, low first)."""
    if bits == 8:
        return np.ascontiguousarray(codes)
    return np.ascontiguousarray(codes[..., 0::2] | (codes[..., 1::2] << 4))


def unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    """Inverse of :func:`pack`."""
    if bits == 8:
        return packed
    out = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.uint8)
    out[..., 0::2], out[..., 1::2] = packed & 0x0F, packed >> 4
    return out


def pack_zero_points(zero: np.ndarray, bits: int) -> np.ndarray:
    """Zero points [N, blocks] in MatMulNBits layout (4 bits: two blocks per byte)."""
    if bits == 8:
        return np.ascontiguousarray(zero)
    if zero.shape[1] % 2:
        zero = np.concatenate([zero, np.zeros((zero.shape[0], 1), dtype=np.uint8)], axis=1)
    return pack(zero, 4)


def unpack_zero_points(packed: np.ndarray, bits: int, blocks: int) -> np.ndarray:
    """Inverse of :func:`pack_zero_points`."""
    return (packed if bits == 8 else unpack(packed, 4))[:, :blocks].astype(np.float32)
