"""An SGLang-shaped upstream history, for tests, demos and benchmarks.

``build_sglang_history(path)`` writes a git repository (branch ``main``, plus
the unmerged side branch ``rename-kimi``) whose files mirror the layout of
SGLang (sgl-project/sglang) around the Kimi-K2.5 and EAGLE-3 changes of early
2026.  The dates, PR numbers and subjects of the key commits follow the real
ones; the code is synthetic, written for patchkit in SGLang's shape (every
``.py`` file says so in its first line, and parses at every commit).  ``LABELS``
lists every commit label with its date and what it does.

What the history is for:

* ``manifests/kimi-k25-eagle3.toml`` adds EAGLE-3 hooks to
  ``KimiK25ForConditionalGeneration`` (python/sglang/srt/models/kimi_k25.py).
  The file appears with ``add-kimi`` (PR #17789, 2026-01-27); upstream adds the
  hooks itself with ``hooks-upstream`` (PR #19689, 2026-03-03), with its own
  code; ``kimi-builtin-generics`` drops ``List`` from the typing import (so the
  manifest's import patch has something to add) until ``hooks-upstream`` puts
  it back; the ``rename-kimi`` branch renames the class.
* ``manifests/eagle3-verify-timing.toml`` inserts statements around the target
  forward call of ``EAGLEWorker.verify``
  (python/sglang/srt/speculative/eagle_worker.py).  The file appears with
  ``add-eagle``; ``verify-nvtx`` is the only commit that changes ``verify``: it
  adds statements above the call and nests the (reformatted) call in a
  ``with`` block, so the anchor still matches, at another line.

Build time is well under a second (one ``git fast-import``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from patchkit.testing.history import History, HistoryBuilder

__all__ = [
    "EAGLE_WORKER",
    "KIMI_K25",
    "LABELS",
    "MAIN",
    "RENAME_BRANCH",
    "TAGS",
    "build_sglang_history",
]

MAIN = "main"
RENAME_BRANCH = "rename-kimi"

KIMI_K25 = "python/sglang/srt/models/kimi_k25.py"
KIMI_CONFIG = "python/sglang/srt/configs/kimi_k25.py"
DEEPSEEK_V2 = "python/sglang/srt/models/deepseek_v2.py"
LLAMA_EAGLE3 = "python/sglang/srt/models/llama_eagle3.py"
EAGLE_WORKER = "python/sglang/srt/speculative/eagle_worker.py"
MODEL_RUNNER = "python/sglang/srt/model_executor/model_runner.py"
PARALLEL_STATE = "python/sglang/srt/distributed/parallel_state.py"
PYNCCL = "python/sglang/srt/distributed/device_communicators/pynccl.py"
PCG_CONTEXT = "python/sglang/srt/compilation/piecewise_context_manager.py"
README = "README.md"
PYPROJECT = "python/pyproject.toml"

LABELS = """\
Commit labels of build_sglang_history (dates are author dates, UTC).

label                  date        branch       subject / role
---------------------  ----------  -----------  --------------------------------------------------------------
root                   2026-01-12  main         "Initial import of the runtime layout": no speculative/ dir yet,
                                                so eagle_worker.py is missing (timing manifest: WARN)
add-eagle              2026-01-14  main         "[Spec] EAGLE worker and EAGLE-3 Llama draft model (#16820)":
                                                adds eagle_worker.py (verify, anchor in its first shape)
docs-install           2026-01-19  main         README churn
release-0.5.8          2026-01-23  main         README churn; tagged v0.5.8
dsv2-router-fp32       2026-01-25  main         deepseek_v2.py churn (MoEGate.forward)
add-kimi               2026-01-27  main         "model: support Kimi-K2.5 (#17789)": adds kimi_k25.py (~25 KB,
                                                no EAGLE-3 hooks) and configs/kimi_k25.py
kimi-dp-reduce         2026-02-02  main         kimi_k25.py churn (MoonViTEncoderLayer.__init__)
pynccl-group-calls     2026-02-03  main         pynccl.py churn (new methods)
verify-nvtx            2026-02-05  main         the only commit that changes EAGLEWorker.verify: statements added
                                                above the target forward, which is reformatted and nested in a
                                                `with` block (anchor matches, at a later line)
kimi-nvfp4             2026-02-08  main         kimi_k25.py churn (WeightsMapper import, class attribute,
                                                load_weights)
kimi-quant-config      2026-02-09  main         kimi_k25.py churn (__init__)
kimi-builtin-generics  2026-02-11  main         kimi_k25.py: List[...] -> list[...], `List` leaves the typing
                                                import (kimi manifest: typing-imports APPLY from here)
runner-eagle3-layers   2026-02-13  main         model_runner.py churn (_dummy_run)
kimi-dp-vit            2026-02-18  main         kimi_k25.py churn (imports, vision tower, get_image_feature)
fix-pcg-moe            2026-02-19  main         "Fix PCG MoE Error (#17739)": pynccl.py (outplace_all_reduce),
                                                parallel_state.py, piecewise_context_manager.py
eagle-draft-extend     2026-02-20  main         eagle_worker.py churn below verify (verify's lines unchanged)
llama-eagle3-head      2026-02-23  main         llama_eagle3.py churn (load_weights)
kimi-pp                2026-02-25  main         kimi_k25.py churn (forward, properties, EPLB classmethod)
kimi-npu               2026-02-26  main         kimi_k25.py churn (is_npu, torch.compile(disable=...));
                                                the rename-kimi branch starts here
dsv2-weight-mixin      2026-02-27  main         deepseek_v2.py churn (load_weights moves into a mixin)
hooks-upstream         2026-03-03  main         "feat: support Kimi K2.5 for Eagle3 (#19689)": upstream's own
                                                set_eagle3_layers_to_capture / get_embed_and_head /
                                                set_embed_and_head (hasattr guard, then delegation), and `List`
                                                back in the typing import
docs-0.5.9             2026-03-05  main         README churn; tagged v0.5.9
kimi-pp-range          2026-03-07  main         kimi_k25.py churn (start_layer / end_layer)
kimi-conv-layers       2026-03-15  main         kimi_k25.py churn (Conv2dLayer)
kimi-pcg               2026-03-18  main         kimi_k25.py and model_runner.py churn; the tip of main
rename-kimi            2026-03-02  rename-kimi  "Rename Kimi model class to KimiK25VLForConditionalGeneration":
                                                class and EntryClass renamed (kimi manifest: CLASS_NOT_FOUND)
rename-kimi-docs       2026-03-04  rename-kimi  kimi_k25.py churn on the branch (docstring, log message); its tip
"""

TAGS = {"v0.5.8": "release-0.5.8", "v0.5.9": "docs-0.5.9"}

_AUTHORS = {
    "mira": ("Mira Castellan", "mira@upstream.invalid"),
    "jonas": ("Jonas Vehr", "jonas@upstream.invalid"),
    "priya": ("Priya Anand", "priya@upstream.invalid"),
    "kenji": ("Kenji Morrow", "kenji@upstream.invalid"),
    "lena": ("Lena Okafor", "lena@upstream.invalid"),
}


def _at(day: str, time: str = "09:00") -> datetime:
    """A UTC timestamp from "2026-01-27" and "02:57"."""
    return datetime.fromisoformat(f"{day}T{time}:00+00:00").astimezone(UTC)


def _edit(text: str, *pairs: tuple[str, str]) -> str:
    """Replace each ``old`` (which must occur exactly once) with ``new``."""
    for old, new in pairs:
        count = text.count(old)
        if count != 1:
            raise AssertionError(f"fixture edit expects exactly one {old[:70]!r}, found {count}")
        text = text.replace(old, new)
    return text


def _edit_all(text: str, old: str, new: str) -> str:
    if old not in text:
        raise AssertionError(f"fixture edit expects {old!r}")
    return text.replace(old, new)


# ---------------------------------------------------------------------------
# File contents at their first commit.  Every .py file starts with a line that
# says it is a synthetic fixture.  The later commits edit these texts.
# ---------------------------------------------------------------------------

_KIMI_K25 = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/models/kimi_k25.py; it is not SGLang code.
"""Kimi-K2.5 for SGLang: a MoonViT-3D vision tower in front of a DeepSeek-V3 text model.

Pixels (images, or video frames) are cut into patches by the vision tower,
encoded with 2D rotary attention, averaged over time and merged 2x2, then
projected to the text model's hidden size.  The projected features replace the
image placeholder tokens of the prompt before the text model runs.

Weights: checkpoint tensors under ``vision_tower.`` and ``mm_projector.`` are
loaded here (with the renames of ``_VISION_WEIGHT_RENAMES``); everything else
belongs to the text model and is handed to ``DeepseekV3ForCausalLM.load_weights``
with the ``language_model.`` prefix removed.  The text model is built exactly
as for a text-only DeepSeek-V3 checkpoint, so its quantization, expert
parallelism and speculative-decoding support apply unchanged.
"""

import logging
from copy import deepcopy
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import activations

from sglang.srt.configs.kimi_k25 import KimiK25Config, KimiK25VisionConfig
from sglang.srt.layers.quantization.base_config import QuantizationConfig
from sglang.srt.managers.mm_utils import (
    MultiModalityDataPaddingPatternMultimodalTokens,
    general_mm_embed_routine,
)

try:
    from transformers.activations import PytorchGELUTanh
except ImportError:  # newer transformers renamed it
    from transformers.activations import GELUTanh as PytorchGELUTanh

from sglang.srt.layers.attention.vision import VisionAttention
from sglang.srt.layers.linear import ReplicatedLinear
from sglang.srt.managers.schedule_batch import (
    Modality,
    MultimodalDataItem,
    MultimodalInputs,
)
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.model_loader.weight_utils import default_weight_loader
from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM
from sglang.srt.models.kimi_vl_moonvit import MLP2
from sglang.srt.utils import add_prefix

# Upper bound on patches per vision-tower call; bigger batches are split so the
# attention workspace stays inside the memory budget profiled at start-up.
KIMIV_VT_INFER_MAX_PATCH_NUM = 16328

logger = logging.getLogger(__name__)


def apply_rope(
    xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rotate queries and keys by the complex frequencies of their 2D positions.

    ``xq`` and ``xk`` are (..., heads, head_dim); ``freqs_cis`` is complex,
    (..., head_dim // 2).  Consecutive channels are read as (real, imag) pairs.
    """
    freqs = freqs_cis.unsqueeze(-2)  # one set of frequencies for every head
    if freqs.shape[-1] * 2 != xq.shape[-1]:
        raise ValueError(
            f"rope frequencies cover {freqs.shape[-1] * 2} channels, heads have {xq.shape[-1]}"
        )
    q_complex = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k_complex = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    q_out = torch.view_as_real(q_complex * freqs).flatten(-2)
    k_out = torch.view_as_real(k_complex * freqs).flatten(-2)
    return q_out.type_as(xq), k_out.type_as(xk)


def tpool_patch_merger(
    x: torch.Tensor,
    grid_thws: torch.Tensor,
    merge_kernel_size: Sequence[int] = (2, 2),
) -> List[torch.Tensor]:
    """Average each item's patches over time, then group kh x kw neighbours.

    ``x`` holds the patches of all items back to back and ``grid_thws`` has one
    (t, h, w) row per item.  The result has one tensor per item, shaped
    (h // kh * w // kw, kh * kw, dim), ready for the projector.
    """
    kh, kw = merge_kernel_size
    dim = x.shape[-1]
    outputs: List[torch.Tensor] = []
    start = 0
    for t, h, w in grid_thws.tolist():
        count = t * h * w
        frames = x[start : start + count].view(t, h, w, dim)
        start += count
        pooled = frames.mean(dim=0)
        blocks = pooled.view(h // kh, kh, w // kw, kw, dim).permute(0, 2, 1, 3, 4)
        outputs.append(blocks.reshape(-1, kh * kw, dim))
    return outputs


class MoonViTEncoderLayer(nn.Module):
    """Pre-norm transformer block of the vision tower (attention, then MLP)."""

    def __init__(
        self,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        *,
        activation=F.gelu,
        attn_bias: bool = False,
        quant_config: Optional[QuantizationConfig] = None,
        prefix: str = "",
    ):
        super().__init__()
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // num_heads
        self.norm0 = nn.LayerNorm(hidden_dim)
        self.norm1 = nn.LayerNorm(hidden_dim)
        self.attn = VisionAttention(
            embed_dim=hidden_dim,
            num_heads=num_heads,
            projection_size=hidden_dim,
            use_qkv_parallel=True,
            qkv_bias=attn_bias,
            proj_bias=attn_bias,
            quant_config=quant_config,
            prefix=add_prefix("attn", prefix),
        )
        self.mlp = MLP2(
            [hidden_dim, mlp_dim, hidden_dim],
            activation,
            quant_config=quant_config,
            prefix=add_prefix("mlp", prefix),
        )

    def attention_qkvpacked(
        self,
        hidden_states: torch.Tensor,
        cu_seqlens: torch.Tensor,
        rope_freqs_cis: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        # Variable-length attention: cu_seqlens marks where each image starts.
        return self.attn(
            hidden_states,
            cu_seqlens=cu_seqlens,
            position_embeddings=rope_freqs_cis,
            rotary_fn=apply_rope,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        cu_seqlens: torch.Tensor,
        rope_freqs_cis: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        residual = hidden_states
        hidden_states = self.norm0(hidden_states)
        hidden_states = self.attention_qkvpacked(hidden_states, cu_seqlens, rope_freqs_cis)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.norm1(hidden_states))
        return residual + hidden_states


def get_rope_shape_decorate(func):
    """Give the compiled interpolation a contiguous input of a fixed dtype.

    torch.compile specialises on strides and dtypes; normalising the input
    here keeps the number of recompilations down to one per output shape.
    """

    def wrapper(org: torch.Tensor, interpolation_mode: str, shape: Tuple[int, int]):
        return func(org.contiguous().float(), interpolation_mode, shape).to(org.dtype)

    return wrapper


def get_1d_sincos_pos_embed_from_grid(embed_dim: int, pos: np.ndarray) -> np.ndarray:
    """Sine/cosine features of 1D positions: (len(pos), embed_dim)."""
    if embed_dim % 2:
        raise ValueError(f"embed_dim must be even, got {embed_dim}")
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000**omega
    angles = np.einsum("m,d->md", pos.reshape(-1), omega)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


@get_rope_shape_decorate
@torch.compile(dynamic=True)
def get_rope_shape(org: torch.Tensor, interpolation_mode: str, shape: Tuple[int, int]) -> torch.Tensor:
    """Resize a (H, W, dim) position table to ``shape`` and flatten it to (h * w, dim)."""
    grid = org.permute(2, 0, 1).unsqueeze(0)
    resized = F.interpolate(grid, size=shape, mode=interpolation_mode)
    return resized.squeeze(0).permute(1, 2, 0).flatten(end_dim=1)


def get_1d_sincos_pos_embed(embed_dim: int, t_size: int, cls_token: bool = False) -> np.ndarray:
    """Fixed temporal embedding for ``t_size`` frames (plus a zero row for a class token)."""
    table = get_1d_sincos_pos_embed_from_grid(embed_dim, np.arange(t_size, dtype=np.float32))
    if cls_token:
        table = np.concatenate([np.zeros([1, embed_dim]), table], axis=0)
    return table


class Learnable2DInterpPosEmbDivided_fixed(nn.Module):
    """Learned 2D position table, resized per image, plus a fixed table over time."""

    def __init__(
        self,
        height: int,
        width: int,
        num_frames: int,
        dim: int,
        interpolation_mode: str = "bicubic",
    ) -> None:
        super().__init__()
        self.height = height
        self.width = width
        self.num_frames = num_frames
        self.dim = dim
        self.interpolation_mode = interpolation_mode
        self.weight = nn.Parameter(torch.empty(height, width, dim))
        time_table = get_1d_sincos_pos_embed(dim, num_frames)
        self.register_buffer(
            "time_weight",
            torch.from_numpy(time_table).float().unsqueeze(1),
            persistent=False,
        )
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.normal_(self.weight)

    def forward(self, x: torch.Tensor, grid_thws: torch.Tensor) -> torch.Tensor:
        pieces = []
        for t, h, w in grid_thws.tolist():
            if t > self.num_frames:
                raise ValueError(f"{t} frames exceed the {self.num_frames} the model was trained with")
            if (h, w) == self.weight.shape[:-1]:
                spatial = self.weight.flatten(end_dim=1)
            else:
                spatial = get_rope_shape(self.weight, self.interpolation_mode, (h, w))
            if t == 1:
                pieces.append(spatial)
            else:
                pieces.append(spatial.unsqueeze(0).repeat(t, 1, 1) + self.time_weight[0:t])
                pieces[-1] = pieces[-1].flatten(end_dim=1)
        return x + torch.cat(pieces)


class Rope2DPosEmbRepeated(nn.Module):
    """2D rotary frequencies for a (max_height, max_width) grid, repeated over time.

    Half of the head channels rotate with the row index and half with the
    column index; the table is built lazily on the first call, on the device
    of the input.
    """

    def __init__(self, dim: int, max_height: int, max_width: int, theta_base: float = 10000.0):
        super().__init__()
        if dim % 4:
            raise ValueError(f"2D rope needs dim divisible by 4, got {dim}")
        self.dim = dim
        self.max_height = max_height
        self.max_width = max_width
        self.theta_base = theta_base
        self.freqs_cis = None

    def extra_repr(self) -> str:
        return f"dim={self.dim}, max_height={self.max_height}, max_width={self.max_width}, theta_base={self.theta_base}"

    def _precompute_freqs_cis(self, device: torch.device) -> torch.Tensor:
        """Complex table (max_height, max_width, dim // 2)."""
        positions = torch.arange(self.max_height * self.max_width, device=device).float()
        rows = positions // self.max_width
        cols = positions % self.max_width
        steps = torch.arange(0, self.dim, 4, device=device)[: self.dim // 4].float()
        inv_freq = 1.0 / (self.theta_base ** (steps / self.dim))
        row_angles = torch.outer(rows, inv_freq)
        col_angles = torch.outer(cols, inv_freq)
        row_cis = torch.polar(torch.ones_like(row_angles), row_angles)
        col_cis = torch.polar(torch.ones_like(col_angles), col_angles)
        table = torch.stack([row_cis, col_cis], dim=-1)
        return table.reshape(self.max_height, self.max_width, -1)

    def get_freqs_cis(self, grid_thws: torch.Tensor, device: torch.device) -> torch.Tensor:
        """Frequencies for every patch of every item, in the order of the patches."""
        if self.freqs_cis is None:
            self.freqs_cis = self._precompute_freqs_cis(device)
        parts = []
        for t, h, w in grid_thws.tolist():
            if h > self.max_height or w > self.max_width:
                raise ValueError(f"grid {h}x{w} exceeds the rope table {self.max_height}x{self.max_width}")
            plane = self.freqs_cis[:h, :w].reshape(-1, self.dim // 2)
            parts.append(plane.repeat(t, 1))
        return torch.cat(parts, dim=0)


class MoonVision3dPatchEmbed(nn.Module):
    """Cut pixels into patches, project each to the hidden size, add positions."""

    def __init__(
        self,
        out_dim: int,
        in_dim: int = 3,
        patch_size: int = 14,
        pos_emb_height: int = 64,
        pos_emb_width: int = 64,
        pos_emb_time: int = 4,
    ):
        super().__init__()
        if isinstance(patch_size, int):
            patch_size = (patch_size, patch_size)
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_dim, out_dim, kernel_size=patch_size, stride=patch_size)
        self.pos_emb = Learnable2DInterpPosEmbDivided_fixed(
            height=pos_emb_height,
            width=pos_emb_width,
            num_frames=pos_emb_time,
            dim=out_dim,
        )

    def forward(self, x: torch.Tensor, grid_thws: torch.Tensor) -> torch.Tensor:
        # x: (num_patches, channels, patch_h, patch_w), already cut by the processor.
        patches = self.proj(x).view(x.size(0), -1)
        return self.pos_emb(patches, grid_thws)


class MoonViT3dEncoder(nn.Module):
    """The stack of vision blocks, sharing one 2D rope table."""

    def __init__(
        self,
        hidden_dim: int,
        num_layers: int,
        block_cfg: dict,
        quant_config: Optional[QuantizationConfig] = None,
        prefix: str = "",
    ) -> None:
        super().__init__()
        self.rope_2d = Rope2DPosEmbRepeated(
            block_cfg["hidden_dim"] // block_cfg["num_heads"], 512, 512
        )
        self.blocks = nn.ModuleList(
            [
                MoonViTEncoderLayer(
                    **block_cfg,
                    quant_config=quant_config,
                    prefix=add_prefix(f"blocks.{index}", prefix),
                )
                for index in range(num_layers)
            ]
        )
        self.final_layernorm = nn.LayerNorm(hidden_dim)

    def forward(self, hidden_states: torch.Tensor, grid_thws: torch.Tensor) -> torch.Tensor:
        rope_freqs_cis = self.rope_2d.get_freqs_cis(grid_thws, device=hidden_states.device)
        lengths = grid_thws.prod(dim=1)
        cu_seqlens = torch.zeros(lengths.numel() + 1, dtype=torch.int32, device=hidden_states.device)
        cu_seqlens[1:] = lengths.cumsum(dim=0)
        for block in self.blocks:
            hidden_states = block(hidden_states, cu_seqlens, rope_freqs_cis=rope_freqs_cis)
        return self.final_layernorm(hidden_states)


class MoonViT3dPretrainedModel(nn.Module):
    """The vision tower: patch embedding, encoder, then time pooling and 2x2 merge."""

    model_type = "moonvit3d"
    _no_split_modules = ["PackingTransformer"]
    _supports_flash_attn_2 = True
    _supports_sdpa = True

    def __init__(self, config: KimiK25VisionConfig, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        config = deepcopy(config)
        self.config = config
        self.merge_kernel_size = config.merge_kernel_size
        self.patch_size = config.patch_size
        self.patch_embed = MoonVision3dPatchEmbed(
            out_dim=config.hidden_size,
            patch_size=config.patch_size,
            pos_emb_height=config.init_pos_emb_height,
            pos_emb_width=config.init_pos_emb_width,
            pos_emb_time=config.init_pos_emb_time,
        )
        self.encoder = MoonViT3dEncoder(
            hidden_dim=config.hidden_size,
            num_layers=config.num_hidden_layers,
            block_cfg={
                "num_heads": config.num_attention_heads,
                "hidden_dim": config.hidden_size,
                "mlp_dim": config.intermediate_size,
                "activation": PytorchGELUTanh(),
                "attn_bias": True,
            },
            quant_config=quant_config,
            prefix=add_prefix("encoder", prefix),
        )

    @property
    def dtype(self) -> torch.dtype:
        return self.patch_embed.proj.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.patch_embed.proj.weight.device

    def forward(self, pixel_values: torch.Tensor, grid_thws: torch.Tensor) -> List[torch.Tensor]:
        hidden_states = self.patch_embed(pixel_values, grid_thws)
        hidden_states = self.encoder(hidden_states, grid_thws)
        return tpool_patch_merger(hidden_states, grid_thws, merge_kernel_size=self.merge_kernel_size)


class K2VLMultiModalProjector(nn.Module):
    """Map merged vision tokens (kh * kw patches each) to the text model's width."""

    def __init__(self, config: KimiK25VisionConfig, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        kh, kw = config.merge_kernel_size
        self.hidden_size = config.hidden_size * kh * kw
        self.pre_norm = nn.LayerNorm(config.hidden_size, eps=1e-5)
        self.linear_1 = ReplicatedLinear(
            self.hidden_size,
            self.hidden_size,
            bias=True,
            quant_config=quant_config,
            prefix=add_prefix("linear_1", prefix),
        )
        self.act = activations.ACT2FN[config.projector_hidden_act]
        self.linear_2 = ReplicatedLinear(
            self.hidden_size,
            config.text_hidden_size,
            bias=True,
            quant_config=quant_config,
            prefix=add_prefix("linear_2", prefix),
        )

    def forward(self, image_features: torch.Tensor) -> torch.Tensor:
        hidden_states = self.pre_norm(image_features).view(-1, self.hidden_size)
        hidden_states, _ = self.linear_1(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states, _ = self.linear_2(hidden_states)
        return hidden_states


@torch.inference_mode()
def mm_projection_auto(mm_projector: nn.Module, image_features: List[torch.Tensor]) -> List[torch.Tensor]:
    """Project every item, batching items together while they fit in one call."""
    if not image_features:
        return []
    sizes = [feature.shape[0] for feature in image_features]
    projected = mm_projector(torch.cat(image_features, dim=0))
    return list(torch.split(projected, sizes, dim=0))


@torch.inference_mode()
def vision_tower_forward_auto(
    vision_tower: nn.Module,
    pixel_values: torch.Tensor,
    grid_thws: torch.Tensor,
) -> List[torch.Tensor]:
    """Run the vision tower in chunks of at most KIMIV_VT_INFER_MAX_PATCH_NUM patches.

    Items are never split: a chunk closes before the item that would overflow
    it.  A single item larger than the limit runs on its own.
    """
    per_item = grid_thws.prod(dim=1).tolist()
    outputs: List[torch.Tensor] = []
    first_item = 0
    first_patch = 0
    chunk_patches = 0
    for index, count in enumerate(per_item):
        if chunk_patches and chunk_patches + count > KIMIV_VT_INFER_MAX_PATCH_NUM:
            outputs.extend(
                vision_tower(
                    pixel_values[first_patch : first_patch + chunk_patches],
                    grid_thws[first_item:index],
                )
            )
            first_item = index
            first_patch += chunk_patches
            chunk_patches = 0
        chunk_patches += count
    if chunk_patches:
        outputs.extend(
            vision_tower(
                pixel_values[first_patch : first_patch + chunk_patches],
                grid_thws[first_item:],
            )
        )
    return outputs


def merged_token_count(grid_thws: torch.Tensor, merge_kernel_size: Sequence[int] = (2, 2)) -> List[int]:
    """How many text positions each item's features fill after pooling and merging.

    Time is averaged away, and every kh x kw block of patches becomes one token,
    so an item of grid (t, h, w) fills (h // kh) * (w // kw) positions.  The
    processor uses the same count when it expands the image placeholders.
    """
    kh, kw = merge_kernel_size
    return [(h // kh) * (w // kw) for _t, h, w in grid_thws.tolist()]


# Checkpoint names of vision weights -> names of this module's parameters.  The
# released checkpoints pack each block's q/k/v projection as "wqkv" and call the
# output projection "wo"; norms and MLP layers keep their names.
_VISION_WEIGHT_RENAMES = (
    (".wqkv.", ".attn.qkv_proj."),
    (".wo.", ".attn.proj."),
    (".mlp.fc0.", ".mlp.fc0."),
    (".mlp.fc1.", ".mlp.fc1."),
)


def _vision_weight_name(name: str) -> str:
    """This module's name for a vision-tower or projector checkpoint tensor."""
    for old, new in _VISION_WEIGHT_RENAMES:
        if old in name:
            name = name.replace(old, new)
    return name


def _check_grid(grid_thws: torch.Tensor, patch_size: int) -> None:
    """Reject grids the processor should never produce, with a readable error."""
    if grid_thws.dim() != 2 or grid_thws.shape[-1] != 3:
        raise ValueError(f"image_grid_thw must be (items, 3), got {tuple(grid_thws.shape)}")
    if bool((grid_thws <= 0).any()):
        raise ValueError("image_grid_thw has an empty dimension; was the image resized to zero?")
    odd = grid_thws[:, 1:] % 2
    if bool(odd.any()):
        raise ValueError(
            f"patch grids must be even in height and width for the 2x2 merge "
            f"(patch size {patch_size}); got {grid_thws.tolist()}"
        )


class KimiK25ForConditionalGeneration(nn.Module):
    """Kimi-K2.5: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""

    def __init__(
        self,
        config: KimiK25Config,
        quant_config: Optional[QuantizationConfig] = None,
        prefix: str = "",
        **kwargs,  # the model loader passes extra arguments to some architectures
    ) -> None:
        super().__init__()
        self.config = config
        self.vision_tower = MoonViT3dPretrainedModel(config.vision_config)
        self.mm_projector = K2VLMultiModalProjector(config.vision_config)
        self.language_model = DeepseekV3ForCausalLM(config.text_config, quant_config)
        if hasattr(self.language_model, "dtype"):
            # The vision side has no quantized kernels: run it in the text model's dtype.
            self.vision_tower = self.vision_tower.to(self.language_model.dtype)
            self.mm_projector = self.mm_projector.to(self.language_model.dtype)

    def get_image_feature(self, items: List[MultimodalDataItem]) -> torch.Tensor:
        """Vision features for the image items of a batch, concatenated."""
        pixel_values = torch.cat([item.feature for item in items], dim=0)
        grid_thws = torch.cat([item.image_grid_thw for item in items], dim=0)
        pixel_values = pixel_values.to(device=self.vision_tower.device, dtype=self.vision_tower.dtype)
        grid_thws = grid_thws.to(self.vision_tower.device)
        _check_grid(grid_thws, self.vision_tower.patch_size)
        merged = vision_tower_forward_auto(self.vision_tower, pixel_values, grid_thws)
        projected = mm_projection_auto(self.mm_projector, merged)
        return torch.cat(projected, dim=0)

    def pad_input_ids(self, input_ids: List[int], mm_inputs: MultimodalInputs):
        """Expand each image placeholder to as many tokens as its features fill.

        The count per image is ``merged_token_count`` of its grid; the padding
        tokens carry the item's hash so the radix cache can tell images apart.
        """
        pattern = MultiModalityDataPaddingPatternMultimodalTokens()
        return pattern.pad_input_tokens(input_ids, mm_inputs)

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        get_embedding: bool = False,
    ):
        return general_mm_embed_routine(
            input_ids=input_ids,
            forward_batch=forward_batch,
            language_model=self.language_model,
            data_embedding_funcs={Modality.IMAGE: self.get_image_feature},
            positions=positions,
        )

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]):
        """Load the vision tower and projector here; hand the rest to the text model."""
        vision_weights = []
        language_weights = []
        for name, tensor in weights:
            if name.startswith(("vision_tower.", "mm_projector.")):
                vision_weights.append((name, tensor))
            elif name.startswith("language_model."):
                language_weights.append((name[len("language_model.") :], tensor))
            else:
                language_weights.append((name, tensor))

        params = dict(self.named_parameters(remove_duplicate=False))
        for name, tensor in vision_weights:
            name = _vision_weight_name(name)
            param = params.get(name)
            if param is None:
                logger.warning("Kimi-K2.5: skipping unexpected vision weight %s", name)
                continue
            loader = getattr(param, "weight_loader", default_weight_loader)
            loader(param, tensor)

        self.language_model.load_weights(language_weights)


EntryClass = [KimiK25ForConditionalGeneration]
'''

_KIMI_CONFIG = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/configs/kimi_k25.py; it is not SGLang code.
"""Configuration classes of Kimi-K2.5 (vision tower + DeepSeek-V3 text model)."""

from typing import Optional, Sequence

from transformers import DeepseekV3Config, PretrainedConfig


class KimiK25VisionConfig(PretrainedConfig):
    model_type = "kimi_k25_vision"

    def __init__(
        self,
        patch_size: int = 14,
        hidden_size: int = 1152,
        num_hidden_layers: int = 27,
        num_attention_heads: int = 16,
        intermediate_size: int = 4304,
        init_pos_emb_height: int = 64,
        init_pos_emb_width: int = 64,
        init_pos_emb_time: int = 4,
        merge_kernel_size: Sequence[int] = (2, 2),
        projector_hidden_act: str = "gelu",
        text_hidden_size: int = 7168,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.patch_size = patch_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.init_pos_emb_height = init_pos_emb_height
        self.init_pos_emb_width = init_pos_emb_width
        self.init_pos_emb_time = init_pos_emb_time
        self.merge_kernel_size = tuple(merge_kernel_size)
        self.projector_hidden_act = projector_hidden_act
        self.text_hidden_size = text_hidden_size


class KimiK25Config(PretrainedConfig):
    model_type = "kimi_k25"

    def __init__(
        self,
        vision_config: Optional[dict] = None,
        text_config: Optional[dict] = None,
        media_placeholder_token_id: int = 163605,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vision_config = KimiK25VisionConfig(**(vision_config or {}))
        self.text_config = DeepseekV3Config(**(text_config or {}))
        self.media_placeholder_token_id = media_placeholder_token_id
'''

_DEEPSEEK_V2 = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/models/deepseek_v2.py; it is not SGLang code.
"""DeepSeek-V2 / V3 / V3.2: multi-head latent attention and a routed mixture of experts."""

import logging
from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from sglang.srt.distributed import (
    get_pp_group,
    get_tensor_model_parallel_world_size,
    tensor_model_parallel_all_reduce,
)
from sglang.srt.layers.activation import SiluAndMul
from sglang.srt.layers.layernorm import RMSNorm
from sglang.srt.layers.linear import (
    ColumnParallelLinear,
    MergedColumnParallelLinear,
    ReplicatedLinear,
    RowParallelLinear,
)
from sglang.srt.layers.logits_processor import LogitsProcessor
from sglang.srt.layers.moe.fused_moe_triton import FusedMoE
from sglang.srt.layers.quantization.base_config import QuantizationConfig
from sglang.srt.layers.radix_attention import RadixAttention
from sglang.srt.layers.rotary_embedding import get_rope
from sglang.srt.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, PPProxyTensors
from sglang.srt.model_loader.weight_utils import default_weight_loader
from sglang.srt.utils import add_prefix, make_layers

logger = logging.getLogger(__name__)


class DeepseekV2MLP(nn.Module):
    """Dense SwiGLU feed-forward (the first layers, and the shared experts)."""

    def __init__(
        self,
        hidden_size: int,
        intermediate_size: int,
        hidden_act: str,
        quant_config: Optional[QuantizationConfig] = None,
        reduce_results: bool = True,
        prefix: str = "",
    ) -> None:
        super().__init__()
        if hidden_act != "silu":
            raise ValueError(f"unsupported activation {hidden_act!r}: only silu is implemented")
        self.gate_up_proj = MergedColumnParallelLinear(
            hidden_size,
            [intermediate_size] * 2,
            bias=False,
            quant_config=quant_config,
            prefix=add_prefix("gate_up_proj", prefix),
        )
        self.down_proj = RowParallelLinear(
            intermediate_size,
            hidden_size,
            bias=False,
            quant_config=quant_config,
            reduce_results=reduce_results,
            prefix=add_prefix("down_proj", prefix),
        )
        self.act_fn = SiluAndMul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate_up, _ = self.gate_up_proj(x)
        x, _ = self.down_proj(self.act_fn(gate_up))
        return x


class MoEGate(nn.Module):
    """Router logits; V3 adds a per-expert bias used only for expert selection."""

    def __init__(self, config, prefix: str = ""):
        super().__init__()
        self.weight = nn.Parameter(torch.empty((config.n_routed_experts, config.hidden_size)))
        if getattr(config, "topk_method", None) == "noaux_tc":
            self.e_score_correction_bias = nn.Parameter(torch.empty((config.n_routed_experts,)))
        else:
            self.e_score_correction_bias = None

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden_states, self.weight, None)


class DeepseekV2MoE(nn.Module):
    """Routed experts plus optional shared experts, reduced once across TP ranks."""

    def __init__(self, config, layer_id: int, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        self.tp_size = get_tensor_model_parallel_world_size()
        self.routed_scaling_factor = config.routed_scaling_factor
        self.n_shared_experts = config.n_shared_experts
        self.gate = MoEGate(config=config, prefix=add_prefix("gate", prefix))
        self.experts = FusedMoE(
            num_experts=config.n_routed_experts,
            top_k=config.num_experts_per_tok,
            hidden_size=config.hidden_size,
            intermediate_size=config.moe_intermediate_size,
            layer_id=layer_id,
            renormalize=config.norm_topk_prob,
            quant_config=quant_config,
            correction_bias=self.gate.e_score_correction_bias,
            routed_scaling_factor=self.routed_scaling_factor,
            prefix=add_prefix("experts", prefix),
        )
        if config.n_shared_experts:
            self.shared_experts = DeepseekV2MLP(
                hidden_size=config.hidden_size,
                intermediate_size=config.moe_intermediate_size * config.n_shared_experts,
                hidden_act=config.hidden_act,
                quant_config=quant_config,
                reduce_results=False,
                prefix=add_prefix("shared_experts", prefix),
            )
        else:
            self.shared_experts = None

    def forward(self, hidden_states: torch.Tensor, forward_batch: Optional[ForwardBatch] = None) -> torch.Tensor:
        shared_output = self.shared_experts(hidden_states) if self.shared_experts is not None else None
        router_logits = self.gate(hidden_states)
        final_hidden_states = self.experts(hidden_states=hidden_states, router_logits=router_logits)
        if shared_output is not None:
            final_hidden_states = final_hidden_states + shared_output
        if self.tp_size > 1:
            final_hidden_states = tensor_model_parallel_all_reduce(final_hidden_states)
        return final_hidden_states


class DeepseekV2AttentionMLA(nn.Module):
    """Multi-head latent attention: keys and values go through a low-rank latent."""

    def __init__(self, config, layer_id: int, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        self.layer_id = layer_id
        self.hidden_size = config.hidden_size
        self.qk_nope_head_dim = config.qk_nope_head_dim
        self.qk_rope_head_dim = config.qk_rope_head_dim
        self.qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim
        self.v_head_dim = config.v_head_dim
        self.q_lora_rank = config.q_lora_rank
        self.kv_lora_rank = config.kv_lora_rank
        tp_size = get_tensor_model_parallel_world_size()
        self.num_local_heads = config.num_attention_heads // tp_size
        self.scaling = self.qk_head_dim**-0.5

        if self.q_lora_rank is not None:
            self.fused_qkv_a_proj_with_mqa = ReplicatedLinear(
                self.hidden_size,
                self.q_lora_rank + self.kv_lora_rank + self.qk_rope_head_dim,
                bias=False,
                quant_config=quant_config,
                prefix=add_prefix("fused_qkv_a_proj_with_mqa", prefix),
            )
            self.q_a_layernorm = RMSNorm(self.q_lora_rank, eps=config.rms_norm_eps)
            self.q_b_proj = ColumnParallelLinear(
                self.q_lora_rank,
                config.num_attention_heads * self.qk_head_dim,
                bias=False,
                quant_config=quant_config,
                prefix=add_prefix("q_b_proj", prefix),
            )
        else:
            self.q_proj = ColumnParallelLinear(
                self.hidden_size,
                config.num_attention_heads * self.qk_head_dim,
                bias=False,
                quant_config=quant_config,
                prefix=add_prefix("q_proj", prefix),
            )
        self.kv_a_layernorm = RMSNorm(self.kv_lora_rank, eps=config.rms_norm_eps)
        self.kv_b_proj = ColumnParallelLinear(
            self.kv_lora_rank,
            config.num_attention_heads * (self.qk_nope_head_dim + self.v_head_dim),
            bias=False,
            quant_config=quant_config,
            prefix=add_prefix("kv_b_proj", prefix),
        )
        self.o_proj = RowParallelLinear(
            config.num_attention_heads * self.v_head_dim,
            self.hidden_size,
            bias=False,
            quant_config=quant_config,
            prefix=add_prefix("o_proj", prefix),
        )
        self.rotary_emb = get_rope(
            self.qk_rope_head_dim,
            rotary_dim=self.qk_rope_head_dim,
            max_position=config.max_position_embeddings,
            base=config.rope_theta,
            rope_scaling=config.rope_scaling,
            is_neox_style=False,
        )
        self.attn_mqa = RadixAttention(
            self.num_local_heads,
            self.kv_lora_rank + self.qk_rope_head_dim,
            self.scaling,
            num_kv_heads=1,
            layer_id=layer_id,
            v_head_dim=self.kv_lora_rank,
            prefix=add_prefix("attn_mqa", prefix),
        )

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor, forward_batch: ForwardBatch) -> torch.Tensor:
        if hidden_states.shape[0] == 0:
            return hidden_states
        latent, _ = self.fused_qkv_a_proj_with_mqa(hidden_states)
        q_latent, kv_latent, k_pe = latent.split(
            [self.q_lora_rank, self.kv_lora_rank, self.qk_rope_head_dim], dim=-1
        )
        q, _ = self.q_b_proj(self.q_a_layernorm(q_latent))
        q = q.view(-1, self.num_local_heads, self.qk_head_dim)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        kv_latent = self.kv_a_layernorm(kv_latent)
        q_pe, k_pe = self.rotary_emb(positions, q_pe, k_pe.unsqueeze(1))
        attn_output = self.attn_mqa(
            torch.cat([q_nope, q_pe], dim=-1),
            torch.cat([kv_latent.unsqueeze(1), k_pe], dim=-1),
            kv_latent.unsqueeze(1),
            forward_batch,
        )
        output, _ = self.o_proj(attn_output.flatten(1))
        return output


class DeepseekV2DecoderLayer(nn.Module):
    def __init__(self, config, layer_id: int, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        self.layer_id = layer_id
        self.self_attn = DeepseekV2AttentionMLA(
            config, layer_id, quant_config=quant_config, prefix=add_prefix("self_attn", prefix)
        )
        self.is_sparse = (
            config.n_routed_experts is not None
            and layer_id >= config.first_k_dense_replace
            and layer_id % config.moe_layer_freq == 0
        )
        if self.is_sparse:
            self.mlp = DeepseekV2MoE(config, layer_id, quant_config=quant_config, prefix=add_prefix("mlp", prefix))
        else:
            self.mlp = DeepseekV2MLP(
                config.hidden_size,
                config.intermediate_size,
                config.hidden_act,
                quant_config=quant_config,
                prefix=add_prefix("mlp", prefix),
            )
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        positions: torch.Tensor,
        hidden_states: torch.Tensor,
        forward_batch: ForwardBatch,
        residual: Optional[torch.Tensor],
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(positions, hidden_states, forward_batch)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states, forward_batch) if self.is_sparse else self.mlp(hidden_states)
        return hidden_states, residual


class DeepseekV2Model(nn.Module):
    def __init__(self, config, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        self.config = config
        self.pp_group = get_pp_group()
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        self.layers, self.start_layer, self.end_layer = make_layers(
            config.num_hidden_layers,
            lambda idx, prefix: DeepseekV2DecoderLayer(config, idx, quant_config=quant_config, prefix=prefix),
            pp_rank=self.pp_group.rank_in_group,
            pp_size=self.pp_group.world_size,
            prefix=add_prefix("layers", prefix),
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        # Indices of layers whose *input* is kept for EAGLE-3 (see
        # DeepseekV2ForCausalLM.set_eagle3_layers_to_capture).
        self.layers_to_capture: List[int] = []

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: Optional[torch.Tensor] = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ):
        if self.pp_group.is_first_rank:
            hidden_states = input_embeds if input_embeds is not None else self.embed_tokens(input_ids)
            residual = None
        else:
            hidden_states = pp_proxy_tensors["hidden_states"]
            residual = pp_proxy_tensors["residual"]

        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
            hidden_states, residual = self.layers[i](positions, hidden_states, forward_batch, residual)

        if not self.pp_group.is_last_rank:
            return PPProxyTensors({"hidden_states": hidden_states, "residual": residual})
        hidden_states, _ = self.norm(hidden_states, residual)
        if not aux_hidden_states:
            return hidden_states
        return hidden_states, aux_hidden_states


class DeepseekV2ForCausalLM(nn.Module):
    def __init__(self, config, quant_config: Optional[QuantizationConfig] = None, prefix: str = "") -> None:
        super().__init__()
        self.config = config
        self.quant_config = quant_config
        self.pp_group = get_pp_group()
        self.model = DeepseekV2Model(config, quant_config, prefix=add_prefix("model", prefix))
        self.lm_head = ParallelLMHead(
            config.vocab_size,
            config.hidden_size,
            quant_config=quant_config,
            prefix=add_prefix("lm_head", prefix),
        )
        self.logits_processor = LogitsProcessor(config)
        self.capture_aux_hidden_states = False

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.embed_tokens

    @torch.no_grad()
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: Optional[torch.Tensor] = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ):
        hidden_states = self.model(input_ids, positions, forward_batch, input_embeds, pp_proxy_tensors)
        if not self.pp_group.is_last_rank:
            return hidden_states
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states)

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]):
        stacked = [
            ("gate_up_proj", "gate_proj", 0),
            ("gate_up_proj", "up_proj", 1),
        ]
        params: Dict[str, Any] = dict(self.named_parameters())
        for name, tensor in weights:
            if "rotary_emb.inv_freq" in name:
                continue
            for packed, part, shard in stacked:
                if part in name and "mlp.experts." not in name:
                    param = params[name.replace(part, packed)]
                    param.weight_loader(param, tensor, shard)
                    break
            else:
                param = params.get(name)
                if param is None:
                    logger.debug("skipping %s: no such parameter", name)
                    continue
                getattr(param, "weight_loader", default_weight_loader)(param, tensor)

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight

    def set_embed_and_head(self, embed, head):
        # Drop our own copies first so the draft model's tensors are the only ones.
        del self.model.embed_tokens.weight
        del self.lm_head.weight
        self.model.embed_tokens.weight = embed
        self.lm_head.weight = head
        torch.cuda.empty_cache()
        torch.cuda.synchronize()

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            # The model records the *input* of layer i, which is the output of
            # layer i - 1: shift by one to capture the outputs asked for.
            self.model.layers_to_capture = [layer_id + 1 for layer_id in layer_ids]


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    pass


class DeepseekV32ForCausalLM(DeepseekV2ForCausalLM):
    pass


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, DeepseekV32ForCausalLM]
'''

_LLAMA_EAGLE3 = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/models/llama_eagle3.py; it is not SGLang code.
"""EAGLE-3 draft head with a Llama layer.

The draft reads the target's hidden states from three layers (low, middle,
high), fuses them to one vector per token, and runs a single decoder layer on
the fused vector concatenated with the token embedding.
"""

from typing import Iterable, Optional, Tuple

import torch
from torch import nn
from transformers import LlamaConfig

from sglang.srt.layers.layernorm import RMSNorm
from sglang.srt.layers.linear import QKVParallelLinear
from sglang.srt.layers.logits_processor import LogitsProcessor
from sglang.srt.layers.quantization.base_config import QuantizationConfig
from sglang.srt.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.models.llama import LlamaDecoderLayer, LlamaForCausalLM
from sglang.srt.utils import add_prefix


class LlamaDecoderLayer(LlamaDecoderLayer):
    """A Llama layer whose attention input is [embedding, fused hidden] (2x wide)."""

    def __init__(self, config: LlamaConfig, layer_id: int = 0, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__(config, layer_id, quant_config, prefix)
        self.self_attn.qkv_proj = QKVParallelLinear(
            2 * self.hidden_size,
            self.self_attn.head_dim,
            self.self_attn.total_num_heads,
            self.self_attn.total_num_kv_heads,
            bias=False,
            quant_config=quant_config,
            prefix=add_prefix("qkv_proj", prefix),
        )
        self.hidden_norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, positions, embeds, hidden_states, forward_batch, residual):
        residual = hidden_states
        embeds = self.input_layernorm(embeds)
        hidden_states = self.hidden_norm(hidden_states)
        hidden_states = torch.cat([embeds, hidden_states], dim=-1)
        hidden_states = self.self_attn(positions=positions, hidden_states=hidden_states, forward_batch=forward_batch)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        return self.mlp(hidden_states), residual


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):
        super().__init__()
        self.config = config
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        target_hidden = getattr(config, "target_hidden_size", config.hidden_size)
        self.fc = nn.Linear(target_hidden * 3, config.hidden_size, bias=getattr(config, "bias", False))
        self.midlayer = LlamaDecoderLayer(config, 0, quant_config, add_prefix("midlayer", prefix))
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, input_ids, positions, forward_batch: ForwardBatch, input_embeds=None):
        embeds = self.embed_tokens(input_ids) if input_embeds is None else input_embeds
        hidden_states = forward_batch.spec_info.hidden_states
        if hidden_states.shape[-1] != embeds.shape[-1]:
            # Three captured layers arrive concatenated: fuse them first.
            hidden_states = self.fc(hidden_states)
        residual = None
        hidden_states, residual = self.midlayer(positions, embeds, hidden_states, forward_batch, residual)
        hidden_states_to_logits, hidden_states_to_aux = self.norm(hidden_states, residual)
        return hidden_states_to_logits, [hidden_states_to_aux]


class LlamaForCausalLMEagle3(LlamaForCausalLM):
    def __init__(self, config: LlamaConfig, quant_config: Optional[QuantizationConfig] = None, prefix: str = "") -> None:
        nn.Module.__init__(self)
        self.config = config
        self.quant_config = quant_config
        if self.config.num_hidden_layers != 1:
            raise ValueError("EAGLE3 currently only supports 1 layer")
        self.model = LlamaModel(config, quant_config=quant_config, prefix=add_prefix("model", prefix))
        self.load_lm_head_from_target = False
        if self.config.tie_word_embeddings:
            self.lm_head = self.model.embed_tokens
        else:
            if getattr(config, "draft_vocab_size", None) is None:
                # No head of its own in the checkpoint: borrow the target's.
                self.load_lm_head_from_target = True
                config.draft_vocab_size = config.vocab_size
            self.lm_head = ParallelLMHead(
                config.draft_vocab_size,
                config.hidden_size,
                quant_config=quant_config,
                prefix=add_prefix("lm_head", prefix),
            )
        self.logits_processor = LogitsProcessor(config)
        self.capture_aux_hidden_states = True
        self.hot_token_id = None

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]) -> None:
        params = dict(self.named_parameters())
        for name, tensor in weights:
            if name == "d2t":
                # Draft-to-target token offsets: hot token ids are index + offset.
                self.hot_token_id = tensor + torch.arange(tensor.shape[0], device=tensor.device)
                continue
            if name == "t2d":
                continue
            if "lm_head" not in name:
                name = "model." + name
            param = params.get(name)
            if param is not None:
                param.weight_loader(param, tensor)

    def get_hot_token_id(self):
        return self.hot_token_id


EntryClass = [LlamaForCausalLMEagle3]
'''

_EAGLE_WORKER = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/speculative/eagle_worker.py; it is not SGLang code.
"""EAGLE speculative decoding: a draft model proposes, the target model verifies.

Each decode step runs the draft model ``speculative_num_steps`` times to grow a
tree of candidate tokens, then runs the target model once over all candidates
(``verify``) and keeps the longest accepted prefix per request.
"""

import logging
import time
from typing import List, Optional, Tuple

import torch

from sglang.srt.layers.logits_processor import LogitsProcessorOutput
from sglang.srt.layers.sampler import get_token_ids_logprobs, get_top_logprobs
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.managers.scheduler import GenerationBatchResult
from sglang.srt.managers.tp_worker import TpModelWorker
from sglang.srt.model_executor.forward_batch_info import (
    CaptureHiddenMode,
    ForwardBatch,
    ForwardMode,
)
from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.eagle_info import (
    EagleDraftInput,
    EagleVerifyInput,
    EagleVerifyOutput,
)
from sglang.srt.speculative.eagle_utils import (
    build_tree_kernel_efficient,
    generate_token_bitmask,
    organize_draft_results,
)
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
from sglang.srt.speculative.spec_utils import detect_nan, draft_tp_context, load_token_map
from sglang.srt.utils import empty_context, get_available_gpu_memory

logger = logging.getLogger(__name__)


class EAGLEWorker(TpModelWorker):
    """Runs the draft model next to a target ``TpModelWorker`` and drives both."""

    def __init__(
        self,
        server_args: ServerArgs,
        gpu_id: int,
        tp_rank: int,
        dp_rank: Optional[int],
        moe_ep_rank: int,
        attn_cp_rank: int,
        moe_dp_rank: int,
        nccl_port: int,
        target_worker: TpModelWorker,
    ):
        self.server_args = server_args
        self.topk = server_args.speculative_eagle_topk
        self.speculative_num_steps = server_args.speculative_num_steps
        self.speculative_num_draft_tokens = server_args.speculative_num_draft_tokens
        self.enable_nan_detection = server_args.enable_nan_detection
        self.gpu_id = gpu_id
        self.device = server_args.device
        self.target_worker = target_worker
        self.page_size = server_args.page_size
        self.speculative_algorithm = SpeculativeAlgorithm.from_string(
            server_args.speculative_algorithm
        )

        # The draft model shares the target's KV pool allocator and request pool.
        self.req_to_token_pool, self.token_to_kv_pool_allocator = (
            target_worker.get_memory_pool()
        )

        # A small vocabulary for the draft head, if the user gave one.
        if server_args.speculative_token_map is not None:
            self.hot_token_id = load_token_map(server_args.speculative_token_map)
            server_args.json_model_override_args = (
                f'{{"hot_vocab_size": {len(self.hot_token_id)}}}'
            )
        else:
            self.hot_token_id = None

        with empty_context():
            super().__init__(
                server_args=server_args,
                gpu_id=gpu_id,
                tp_rank=tp_rank,
                pp_rank=0,
                dp_rank=dp_rank,
                moe_ep_rank=moe_ep_rank,
                attn_cp_rank=attn_cp_rank,
                moe_dp_rank=moe_dp_rank,
                nccl_port=nccl_port,
                is_draft_worker=True,
                req_to_token_pool=self.req_to_token_pool,
                token_to_kv_pool_allocator=self.token_to_kv_pool_allocator,
            )

        # Share the target's embedding (and, for EAGLE/NextN, its LM head) with
        # the draft model: the draft checkpoint does not carry them.
        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
        draft_model = self.draft_model_runner.model
        if self.speculative_algorithm.is_eagle3():
            if getattr(draft_model, "load_lm_head_from_target", False):
                draft_model.set_embed_and_head(embed, head)
            else:
                draft_model.set_embed(embed)
            if self.hot_token_id is None:
                self.hot_token_id = draft_model.get_hot_token_id()
        else:
            if self.hot_token_id is not None:
                head = head.clone()
                self.hot_token_id = self.hot_token_id.to(head.device)
                head.data = head.data[self.hot_token_id]
            draft_model.set_embed_and_head(embed, head)
        if self.hot_token_id is not None:
            self.hot_token_id = self.hot_token_id.to(self.device)

        with draft_tp_context(self.draft_model_runner.tp_group):
            self.init_attention_backend()
            self.init_cuda_graphs()

    def init_attention_backend(self):
        """Pick the draft attention backends (multi-step decode and extend)."""
        from sglang.srt.speculative.draft_utils import DraftBackendFactory

        factory = DraftBackendFactory(
            self.server_args,
            self.draft_model_runner,
            self.topk,
            self.speculative_num_steps,
        )
        self.draft_attn_backend = factory.create_decode_backend()
        self.draft_extend_attn_backend = factory.create_draft_extend_backend()
        self.draft_model_runner.draft_attn_backend = self.draft_attn_backend

    def init_cuda_graphs(self):
        """Capture CUDA graphs for the draft loop, unless they are disabled."""
        self.cuda_graph_runner = None
        self.cuda_graph_runner_for_draft_extend = None
        if self.server_args.disable_cuda_graph:
            return
        from sglang.srt.speculative.eagle_draft_cuda_graph_runner import (
            EAGLEDraftCudaGraphRunner,
        )

        started = time.perf_counter()
        before_mem = get_available_gpu_memory(self.device, self.gpu_id)
        logger.info("Capture draft cuda graph begin. This can take up to several minutes.")
        self.cuda_graph_runner = EAGLEDraftCudaGraphRunner(self)
        after_mem = get_available_gpu_memory(self.device, self.gpu_id)
        logger.info(
            "Capture draft cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB.",
            time.perf_counter() - started,
            before_mem - after_mem,
        )

    @property
    def draft_model_runner(self):
        return self.model_runner

    def forward_batch_generation(self, batch: ScheduleBatch) -> GenerationBatchResult:
        """One scheduler step: prefill the target (and draft), or draft + verify."""
        if batch.forward_mode.is_extend() or batch.is_extend_in_batch:
            logits_output, next_token_ids, seq_lens_cpu = self.forward_target_extend(batch)
            with draft_tp_context(self.draft_model_runner.tp_group):
                self.forward_draft_extend(batch, logits_output.hidden_states, next_token_ids, seq_lens_cpu)
            return GenerationBatchResult(
                logits_output=logits_output,
                next_token_ids=next_token_ids,
                num_accepted_tokens=0,
                can_run_cuda_graph=False,
            )

        with draft_tp_context(self.draft_model_runner.tp_group):
            spec_info = self.draft(batch)
        logits_output, verify_output, model_worker_batch, can_run_cuda_graph = self.verify(
            batch, spec_info
        )
        with draft_tp_context(self.draft_model_runner.tp_group):
            if batch.spec_info.verified_id.shape[0] > 0:
                self.forward_draft_extend_after_decode(batch)
        return GenerationBatchResult(
            logits_output=logits_output,
            next_token_ids=verify_output.verified_id,
            num_accepted_tokens=sum(verify_output.accept_length_per_req_cpu),
            can_run_cuda_graph=can_run_cuda_graph,
        )

    def forward_target_extend(self, batch: ScheduleBatch):
        """Prefill on the target model, keeping the hidden states the draft needs."""
        model_worker_batch = batch.get_model_worker_batch()
        model_worker_batch.capture_hidden_mode = CaptureHiddenMode.FULL
        batch_result = self.target_worker.forward_batch_generation(model_worker_batch)
        return (
            batch_result.logits_output,
            batch_result.next_token_ids,
            model_worker_batch.seq_lens_cpu,
        )

    def draft(self, batch: ScheduleBatch) -> EagleVerifyInput:
        """Grow the candidate tree with ``speculative_num_steps`` draft forwards."""
        spec_info = batch.spec_info
        if batch.forward_mode.is_idle():
            return EagleVerifyInput.create_idle_input(
                self.topk, self.speculative_num_steps, self.speculative_num_draft_tokens
            )
        spec_info.capture_hidden_mode = CaptureHiddenMode.LAST
        spec_info.num_tokens_per_req = self.topk
        spec_info.num_tokens_for_logprob_per_req = self.topk
        batch.return_hidden_states = False

        model_worker_batch = batch.get_model_worker_batch()
        forward_batch = ForwardBatch.init_new(model_worker_batch, self.draft_model_runner)
        can_cuda_graph = self.cuda_graph_runner is not None and self.cuda_graph_runner.can_run(forward_batch)
        if can_cuda_graph:
            parent_list, top_scores_index, draft_tokens = self.cuda_graph_runner.replay(forward_batch)
        else:
            forward_batch.can_run_dp_cuda_graph = False
            self.draft_attn_backend.init_forward_metadata(forward_batch)
            parent_list, top_scores_index, draft_tokens = self.draft_forward(forward_batch)

        tree = build_tree_kernel_efficient(
            spec_info.verified_id,
            parent_list,
            top_scores_index,
            draft_tokens,
            batch.seq_lens,
            batch.seq_lens_sum,
            self.topk,
            self.speculative_num_steps,
            self.speculative_num_draft_tokens,
        )
        return EagleVerifyInput.from_tree(tree, batch.seq_lens_cpu)

    def draft_forward(self, forward_batch: ForwardBatch):
        """The draft loop without CUDA graphs: one forward per step, top-k each time."""
        spec_info = forward_batch.spec_info
        out_cache_loc = forward_batch.out_cache_loc
        topk_p, topk_index, hidden_states = spec_info.topk_p, spec_info.topk_index, spec_info.hidden_states
        if self.hot_token_id is not None:
            topk_index = self.hot_token_id[topk_index]
        score_list: List[torch.Tensor] = []
        token_list: List[torch.Tensor] = []
        parents_list: List[torch.Tensor] = []
        scores = None
        for step in range(self.speculative_num_steps):
            input_ids, hidden_states, scores, tree_info = spec_info.select_top_k_tokens(
                step, self.topk, topk_p, topk_index, hidden_states, scores
            )
            score_list.append(tree_info[0])
            token_list.append(tree_info[1])
            parents_list.append(tree_info[2])
            if step == self.speculative_num_steps - 1:
                break
            forward_batch.input_ids = input_ids
            forward_batch.out_cache_loc = out_cache_loc[step]
            forward_batch.positions.add_(1)
            forward_batch.attn_backend = self.draft_attn_backend.attn_backends[step]
            spec_info.hidden_states = hidden_states
            logits_output = self.draft_model_runner.forward(forward_batch, skip_attn_backend_init=True).logits_output
            probs = torch.softmax(logits_output.next_token_logits, dim=-1)
            topk_p, topk_index = torch.topk(probs, self.topk, dim=-1)
            if self.hot_token_id is not None:
                topk_index = self.hot_token_id[topk_index]
            hidden_states = logits_output.hidden_states
        return organize_draft_results(score_list, token_list, parents_list, self.speculative_num_draft_tokens)

    def clear_cache_pool(self):
        # The draft shares the target's pools: nothing of its own to clear.
        pass

    def verify(self, batch: ScheduleBatch, spec_info: EagleVerifyInput):
        """Score every candidate with one target forward and accept the longest prefix."""
        seq_lens_pre_verify = batch.seq_lens.clone()
        spec_info.prepare_for_verify(batch, self.page_size)
        spec_info.num_tokens_per_req = self.speculative_num_steps + 1
        batch.return_hidden_states = False
        batch.forward_mode = (
            ForwardMode.TARGET_VERIFY
            if not batch.forward_mode.is_idle()
            else ForwardMode.IDLE
        )
        batch.spec_info = spec_info

        model_worker_batch = batch.get_model_worker_batch(
            seq_lens_cpu_cache=spec_info.seq_lens_cpu
        )
        assert model_worker_batch.capture_hidden_mode == spec_info.capture_hidden_mode

        if batch.has_grammar:
            # The grammar walks the tree on the CPU while the GPU verifies.
            retrieve_next_token_cpu = spec_info.retrive_next_token.cpu()
            retrieve_next_sibling_cpu = spec_info.retrive_next_sibling.cpu()
            draft_tokens_cpu = spec_info.draft_token.view(spec_info.retrive_next_token.shape).cpu()

        # Forward
        batch_result = self.target_worker.forward_batch_generation(
            model_worker_batch, is_verify=True
        )
        logits_output, can_run_cuda_graph = (
            batch_result.logits_output,
            batch_result.can_run_cuda_graph,
        )

        vocab_mask = None
        if batch.has_grammar:
            vocab_mask = generate_token_bitmask(
                batch.reqs,
                spec_info,
                retrieve_next_token_cpu,
                retrieve_next_sibling_cpu,
                draft_tokens_cpu,
                batch.sampling_info.vocab_size,
            )
            if vocab_mask is not None:
                assert spec_info.grammar is not None
                vocab_mask = vocab_mask.to(spec_info.retrive_next_token.device)
                batch.sampling_info.vocab_mask = None

        if self.enable_nan_detection:
            detect_nan(logits_output)

        spec_info.hidden_states = logits_output.hidden_states
        res: EagleVerifyOutput = spec_info.verify(
            batch,
            logits_output,
            self.token_to_kv_pool_allocator,
            self.page_size,
            vocab_mask,
        )

        # Keep only the rows of accepted tokens.
        logits_output.next_token_logits = logits_output.next_token_logits[res.accepted_indices]
        logits_output.hidden_states = logits_output.hidden_states[res.accepted_indices]

        if batch.return_logprob:
            self.add_logprob_values(batch, res, logits_output)

        batch.forward_mode = (
            ForwardMode.DECODE if not batch.forward_mode.is_idle() else ForwardMode.IDLE
        )
        batch.spec_info = res.draft_input
        batch.seq_lens_pre_verify = seq_lens_pre_verify
        return logits_output, res, model_worker_batch, can_run_cuda_graph

    def add_logprob_values(self, batch: ScheduleBatch, res: EagleVerifyOutput, logits_output: LogitsProcessorOutput):
        """Attach log-probabilities of the accepted tokens to their requests."""
        logprobs = torch.log_softmax(logits_output.next_token_logits, dim=-1)
        accepted = res.verified_id
        values = logprobs.gather(-1, accepted.unsqueeze(-1)).squeeze(-1).tolist()
        if batch.top_logprobs_nums and any(n > 0 for n in batch.top_logprobs_nums):
            top_values, top_indices = get_top_logprobs(logprobs, batch.top_logprobs_nums)
        else:
            top_values = top_indices = None
        if batch.token_ids_logprobs:
            token_values, token_indices = get_token_ids_logprobs(logprobs, batch.token_ids_logprobs)
        else:
            token_values = token_indices = None
        start = 0
        for req, count in zip(batch.reqs, res.accept_length_per_req_cpu):
            taken = count + 1
            req.output_token_logprobs_val.extend(values[start : start + taken])
            req.output_token_logprobs_idx.extend(accepted[start : start + taken].tolist())
            if top_values is not None:
                req.output_top_logprobs_val.extend(top_values[start : start + taken])
                req.output_top_logprobs_idx.extend(top_indices[start : start + taken])
            if token_values is not None:
                req.output_token_ids_logprobs_val.extend(token_values[start : start + taken])
                req.output_token_ids_logprobs_idx.extend(token_indices[start : start + taken])
            start += taken

    def forward_draft_extend(
        self,
        batch: ScheduleBatch,
        hidden_states: torch.Tensor,
        next_token_ids: torch.Tensor,
        seq_lens_cpu: Optional[torch.Tensor],
    ):
        """Run the draft model over the prompt so its KV cache matches the target's."""
        batch.spec_info = EagleDraftInput(
            hidden_states=hidden_states,
            verified_id=next_token_ids,
            num_tokens_per_req=1,
            num_tokens_for_logprob_per_req=1,
        )
        batch.return_hidden_states = False
        batch.spec_info.prepare_for_extend(batch)
        batch.spec_info.capture_hidden_mode = CaptureHiddenMode.LAST
        model_worker_batch = batch.get_model_worker_batch(seq_lens_cpu_cache=seq_lens_cpu)
        forward_batch = ForwardBatch.init_new(model_worker_batch, self.draft_model_runner)
        forward_batch.return_logprob = False
        logits_output = self.draft_model_runner.forward(forward_batch).logits_output
        self.capture_for_decode(logits_output, forward_batch.spec_info)

    def forward_draft_extend_after_decode(self, batch: ScheduleBatch):
        """Feed the tokens verify accepted back to the draft model."""
        saved_forward_mode = batch.forward_mode
        batch.spec_info.prepare_extend_after_decode(batch, self.speculative_num_steps)
        batch.forward_mode = ForwardMode.DRAFT_EXTEND
        batch.return_hidden_states = False
        model_worker_batch = batch.get_model_worker_batch()
        forward_batch = ForwardBatch.init_new(model_worker_batch, self.draft_model_runner)
        logits_output = self.draft_model_runner.forward(forward_batch).logits_output
        self.capture_for_decode(logits_output, forward_batch.spec_info)
        batch.forward_mode = saved_forward_mode

    def capture_for_decode(self, logits_output: LogitsProcessorOutput, draft_input: EagleDraftInput):
        """Keep the top-k draft proposals and hidden states for the next draft step."""
        probs = torch.softmax(logits_output.next_token_logits, dim=-1)
        draft_input.topk_p, draft_input.topk_index = torch.topk(probs, self.topk, dim=-1)
        draft_input.hidden_states = logits_output.hidden_states

    def update_weights_from_tensor(self, recv_req):
        """Weights pushed by an RL trainer: update the target, then the draft."""
        success, message = self.target_worker.update_weights_from_tensor(recv_req)
        if not success:
            return success, message
        return self.model_runner.update_weights_from_tensor(
            named_tensors=recv_req.named_tensors,
            load_format=recv_req.load_format,
        )
'''

_MODEL_RUNNER = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/model_executor/model_runner.py; it is not SGLang code.
"""ModelRunner: loads one model on one GPU and runs forward passes for the scheduler."""

import gc
import logging
import time
from typing import List, Optional

import torch

from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.distributed import get_tp_group, init_distributed_environment, initialize_model_parallel
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.model_loader import get_model
from sglang.srt.server_args import ServerArgs
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
from sglang.srt.utils import get_available_gpu_memory

logger = logging.getLogger(__name__)


class ModelRunner:
    def __init__(
        self,
        model_config: ModelConfig,
        mem_fraction_static: float,
        gpu_id: int,
        tp_rank: int,
        tp_size: int,
        nccl_port: int,
        server_args: ServerArgs,
        is_draft_worker: bool = False,
    ):
        self.model_config = model_config
        self.mem_fraction_static = mem_fraction_static
        self.device = server_args.device
        self.gpu_id = gpu_id
        self.tp_rank = tp_rank
        self.tp_size = tp_size
        self.server_args = server_args
        self.is_draft_worker = is_draft_worker
        self.spec_algorithm = SpeculativeAlgorithm.from_string(server_args.speculative_algorithm)

        # EAGLE-3 targets keep hidden states from a few layers for the draft head.
        self.eagle_use_aux_hidden_state = False
        self.eagle_aux_hidden_state_layer_ids: Optional[List[int]] = None
        if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:
            draft_config = ModelConfig.from_server_args(
                server_args,
                model_path=server_args.speculative_draft_model_path,
                is_draft_model=True,
            )
            self.eagle_use_aux_hidden_state = True
            try:
                eagle_config = getattr(draft_config.hf_config, "eagle_config", None) or {}
                self.eagle_use_aux_hidden_state = eagle_config.get("use_aux_hidden_state", True)
                self.eagle_aux_hidden_state_layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
            except (KeyError, TypeError):
                self.eagle_aux_hidden_state_layer_ids = None

        self.init_torch_distributed(nccl_port)
        self.initialize()

    def init_torch_distributed(self, nccl_port: int):
        torch.cuda.set_device(self.gpu_id)
        init_distributed_environment(
            backend="nccl",
            world_size=self.tp_size,
            rank=self.tp_rank,
            local_rank=self.gpu_id,
            distributed_init_method=f"tcp://127.0.0.1:{nccl_port}",
        )
        initialize_model_parallel(tensor_model_parallel_size=self.tp_size)
        self.tp_group = get_tp_group()

    def initialize(self):
        started = time.perf_counter()
        before = get_available_gpu_memory(self.device, self.gpu_id)
        self.model = get_model(model_config=self.model_config, device_config=self.device)
        after = get_available_gpu_memory(self.device, self.gpu_id)
        logger.info(
            "Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.",
            time.perf_counter() - started,
            type(self.model).__name__,
            after,
            before - after,
        )
        self.init_attention_backend()
        self.init_device_graphs()
        if self.eagle_use_aux_hidden_state:
            # Raises AttributeError if the target model class has no EAGLE-3 hooks.
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)

    def init_attention_backend(self):
        from sglang.srt.layers.attention.attention_registry import create_attention_backend

        self.attn_backend = create_attention_backend(self.server_args.attention_backend, self)

    def init_device_graphs(self):
        self.graph_runner = None
        if self.server_args.disable_cuda_graph:
            return
        from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner

        self.graph_runner = CudaGraphRunner(self)

    def _dummy_run(self, batch_size: int):
        """A warm-up forward with fake inputs (used when profiling memory)."""
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture()
        forward_batch = ForwardBatch.dummy(self, batch_size)
        with torch.inference_mode():
            self.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)
        gc.collect()

    def forward(self, forward_batch: ForwardBatch, skip_attn_backend_init: bool = False):
        if self.graph_runner is not None and self.graph_runner.can_run(forward_batch):
            return self.graph_runner.replay(forward_batch, skip_attn_backend_init=skip_attn_backend_init)
        if not skip_attn_backend_init:
            self.attn_backend.init_forward_metadata(forward_batch)
        return self.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)
'''

_PARALLEL_STATE = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/distributed/parallel_state.py; it is not SGLang code.
"""Process groups for tensor, pipeline and expert parallelism, and their collectives."""

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import torch
import torch.distributed

logger = logging.getLogger(__name__)


@dataclass
class GraphCaptureContext:
    stream: torch.cuda.Stream


class GroupCoordinator:
    """One process group plus the fast communicators built on it."""

    def __init__(
        self,
        group_ranks: List[List[int]],
        local_rank: int,
        torch_distributed_backend: str,
        use_pynccl: bool,
        use_custom_allreduce: bool,
        group_name: Optional[str] = None,
    ):
        self.unique_name = group_name or "anonymous"
        self.rank = torch.distributed.get_rank()
        self.local_rank = local_rank
        self.device_group = None
        self.cpu_group = None
        for ranks in group_ranks:
            device_group = torch.distributed.new_group(ranks, backend=torch_distributed_backend)
            cpu_group = torch.distributed.new_group(ranks, backend="gloo")
            if self.rank in ranks:
                self.ranks = ranks
                self.world_size = len(ranks)
                self.rank_in_group = ranks.index(self.rank)
                self.device_group = device_group
                self.cpu_group = cpu_group
        assert self.device_group is not None, "this rank is in none of the groups"
        self.device = torch.device(f"cuda:{local_rank}")

        self.pynccl_comm = None
        if use_pynccl and self.world_size > 1:
            from sglang.srt.distributed.device_communicators.pynccl import PyNcclCommunicator

            self.pynccl_comm = PyNcclCommunicator(group=self.cpu_group, device=self.device)
        self.ca_comm = None
        if use_custom_allreduce and self.world_size > 1:
            from sglang.srt.distributed.device_communicators.custom_all_reduce import CustomAllreduce

            self.ca_comm = CustomAllreduce(group=self.cpu_group, device=self.device)

    @property
    def is_first_rank(self) -> bool:
        return self.rank == self.ranks[0]

    @property
    def is_last_rank(self) -> bool:
        return self.rank == self.ranks[-1]

    @contextmanager
    def graph_capture(self, graph_capture_context: Optional[GraphCaptureContext] = None):
        if graph_capture_context is None:
            graph_capture_context = GraphCaptureContext(torch.cuda.Stream())
        stream = graph_capture_context.stream
        with torch.cuda.stream(stream):
            yield graph_capture_context

    def all_reduce(self, input_: torch.Tensor) -> torch.Tensor:
        """Sum across the group, with the fastest communicator that can do it."""
        if self.world_size == 1:
            return input_
        outplace = self._all_reduce_out_place_method(input_)
        if outplace is not None:
            return self._all_reduce_out_place(input_, outplace)
        self._all_reduce_in_place(input_)
        return input_

    def _all_reduce_out_place_method(self, input_: torch.Tensor) -> Optional[str]:
        if self.ca_comm is not None and not self.ca_comm.disabled and self.ca_comm.should_custom_ar(input_):
            return "ca"
        return None

    def _all_reduce_out_place(self, input_: torch.Tensor, method: str) -> torch.Tensor:
        if method == "ca":
            return self.ca_comm.custom_all_reduce(input_)
        raise ValueError(f"unknown out-of-place all-reduce method {method!r}")

    def _all_reduce_in_place(self, input_: torch.Tensor) -> None:
        if self.pynccl_comm is not None and not self.pynccl_comm.disabled:
            self.pynccl_comm.all_reduce(input_)
        else:
            torch.distributed.all_reduce(input_, group=self.device_group)

    def all_gather(self, input_: torch.Tensor, dim: int = -1) -> torch.Tensor:
        if self.world_size == 1:
            return input_
        dim = dim % input_.dim()
        output = torch.empty(
            (self.world_size,) + tuple(input_.shape), dtype=input_.dtype, device=input_.device
        )
        torch.distributed.all_gather_into_tensor(output, input_, group=self.device_group)
        return output.movedim(0, dim).reshape(
            input_.shape[:dim] + (self.world_size * input_.shape[dim],) + input_.shape[dim + 1 :]
        )

    def broadcast_object(self, obj: Optional[Any] = None, src: int = 0) -> Any:
        if self.world_size == 1:
            return obj
        holder = [obj if self.rank_in_group == src else None]
        torch.distributed.broadcast_object_list(holder, src=self.ranks[src], group=self.cpu_group)
        return holder[0]

    def destroy(self) -> None:
        self.pynccl_comm = None
        self.ca_comm = None


_TP: Optional[GroupCoordinator] = None
_PP: Optional[GroupCoordinator] = None
_GROUPS: Dict[str, GroupCoordinator] = {}


def get_tp_group() -> GroupCoordinator:
    assert _TP is not None, "tensor model parallel group is not initialized"
    return _TP


def get_pp_group() -> GroupCoordinator:
    assert _PP is not None, "pipeline model parallel group is not initialized"
    return _PP


def get_tensor_model_parallel_world_size() -> int:
    return get_tp_group().world_size


def tensor_model_parallel_all_reduce(input_: torch.Tensor) -> torch.Tensor:
    return get_tp_group().all_reduce(input_)


def initialize_model_parallel(tensor_model_parallel_size: int = 1, pipeline_model_parallel_size: int = 1, backend: str = "nccl") -> None:
    global _TP, _PP
    world_size = torch.distributed.get_world_size()
    if world_size != tensor_model_parallel_size * pipeline_model_parallel_size:
        raise RuntimeError(
            f"world size {world_size} is not tp {tensor_model_parallel_size} x pp {pipeline_model_parallel_size}"
        )
    tp_groups = [
        list(range(start, start + tensor_model_parallel_size))
        for start in range(0, world_size, tensor_model_parallel_size)
    ]
    pp_groups = [
        list(range(offset, world_size, tensor_model_parallel_size))
        for offset in range(tensor_model_parallel_size)
    ]
    local_rank = torch.distributed.get_rank() % torch.cuda.device_count()
    _TP = GroupCoordinator(tp_groups, local_rank, backend, True, True, group_name="tp")
    _PP = GroupCoordinator(pp_groups, local_rank, backend, False, False, group_name="pp")
    _GROUPS.update(tp=_TP, pp=_PP)


def destroy_model_parallel() -> None:
    global _TP, _PP
    for group in _GROUPS.values():
        group.destroy()
    _GROUPS.clear()
    _TP = _PP = None
'''

_PYNCCL = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/distributed/device_communicators/pynccl.py; it is not SGLang code.
"""A thin NCCL communicator called through ctypes, usable inside CUDA graphs."""

import logging
from typing import Optional, Union

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup, ReduceOp

from sglang.srt.distributed.device_communicators.pynccl_wrapper import (
    NCCLLibrary,
    buffer_type,
    cudaStream_t,
    ncclComm_t,
    ncclDataTypeEnum,
    ncclRedOpTypeEnum,
    ncclUniqueId,
)

logger = logging.getLogger(__name__)


class PyNcclCommunicator:
    def __init__(
        self,
        group: ProcessGroup,
        device: Union[int, str, torch.device],
        library_path: Optional[str] = None,
    ):
        if dist.get_backend(group) == dist.Backend.NCCL:
            raise ValueError("PyNcclCommunicator needs a non-NCCL (e.g. gloo) group to exchange its unique id")
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.available = False
        self.disabled = True
        if self.world_size == 1:
            return
        try:
            self.nccl = NCCLLibrary(library_path)
        except Exception:
            logger.warning("pynccl: NCCL library not found; falling back to torch.distributed")
            return
        self.available = True
        self.disabled = False
        if self.rank == 0:
            self.unique_id = self.nccl.ncclGetUniqueId()
        else:
            self.unique_id = ncclUniqueId()
        holder = [self.unique_id if self.rank == 0 else None]
        dist.broadcast_object_list(holder, src=dist.get_global_rank(group, 0), group=group)
        self.unique_id = holder[0]
        if isinstance(device, int):
            device = torch.device(f"cuda:{device}")
        elif isinstance(device, str):
            device = torch.device(device)
        self.device = device
        with torch.cuda.device(device):
            self.comm: ncclComm_t = self.nccl.ncclCommInitRank(self.world_size, self.unique_id, self.rank)
            stream = torch.cuda.current_stream()
            warmup = torch.zeros(1, device=device)
            self.all_reduce(warmup)
            stream.synchronize()
        # Start disabled: graph capture turns it on explicitly.
        self.disabled = True

    def _stream(self, stream: Optional[torch.cuda.Stream]) -> cudaStream_t:
        return cudaStream_t((stream or torch.cuda.current_stream()).cuda_stream)

    def all_reduce(self, tensor: torch.Tensor, op: ReduceOp = ReduceOp.SUM, stream=None):
        """In-place sum (or other op) of ``tensor`` across the group."""
        if self.disabled:
            return
        assert tensor.device == self.device, f"tensor on {tensor.device}, communicator on {self.device}"
        self.nccl.ncclAllReduce(
            buffer_type(tensor.data_ptr()),
            buffer_type(tensor.data_ptr()),
            tensor.numel(),
            ncclDataTypeEnum.from_torch(tensor.dtype),
            ncclRedOpTypeEnum.from_torch(op),
            self.comm,
            self._stream(stream),
        )

    def all_gather(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, stream=None):
        if self.disabled:
            return
        self.nccl.ncclAllGather(
            buffer_type(input_tensor.data_ptr()),
            buffer_type(output_tensor.data_ptr()),
            input_tensor.numel(),
            ncclDataTypeEnum.from_torch(input_tensor.dtype),
            self.comm,
            self._stream(stream),
        )

    def broadcast(self, tensor: torch.Tensor, src: int, stream=None):
        if self.disabled:
            return
        self.nccl.ncclBroadcast(
            buffer_type(tensor.data_ptr()),
            buffer_type(tensor.data_ptr()),
            tensor.numel(),
            ncclDataTypeEnum.from_torch(tensor.dtype),
            src,
            self.comm,
            self._stream(stream),
        )
'''

_PCG_CONTEXT = r'''# Synthetic SGLang-shaped fixture written for patchkit's tests (patchkit.demo.sglang).
# It mirrors the layout of SGLang's python/sglang/srt/compilation/piecewise_context_manager.py; it is not SGLang code.
"""Tracks whether the current forward runs inside a piecewise CUDA graph (PCG)."""

from contextlib import contextmanager

_IN_PIECEWISE_CUDA_GRAPH = False


@contextmanager
def enable_piecewise_cuda_graph():
    global _IN_PIECEWISE_CUDA_GRAPH
    previous = _IN_PIECEWISE_CUDA_GRAPH
    _IN_PIECEWISE_CUDA_GRAPH = True
    try:
        yield
    finally:
        _IN_PIECEWISE_CUDA_GRAPH = previous
'''


# ---------------------------------------------------------------------------
# The upstream methods of PR #19689, as this fixture writes them: a hasattr
# guard, then delegation.  Deliberately not the code of
# patches/kimi_k25_eagle3.py, so that the manifest sees "upstream defines these
# names with other code" (SKIP UPSTREAM_PROVIDES with on_conflict keep-upstream).
# ---------------------------------------------------------------------------

_UPSTREAM_EAGLE3_HOOKS = '''
    def set_eagle3_layers_to_capture(
        self, layer_ids: Optional[List[int]] = None
    ) -> None:
        """Choose the text-model layers whose hidden states feed the EAGLE-3 draft."""
        if not hasattr(self.language_model, "set_eagle3_layers_to_capture"):
            raise AttributeError(
                "Kimi-K2.5: the text model cannot capture hidden states for EAGLE-3."
            )
        self.language_model.set_eagle3_layers_to_capture(layer_ids)

    def get_embed_and_head(self) -> Tuple[torch.Tensor, torch.Tensor]:
        if not hasattr(self.language_model, "get_embed_and_head"):
            raise AttributeError("Kimi-K2.5: the text model has no get_embed_and_head().")
        return self.language_model.get_embed_and_head()

    def set_embed_and_head(self, embed: torch.Tensor, head: torch.Tensor) -> None:
        if not hasattr(self.language_model, "set_embed_and_head"):
            raise AttributeError("Kimi-K2.5: the text model has no set_embed_and_head().")
        self.language_model.set_embed_and_head(embed, head)
'''

_README = """\
# SGLang (synthetic fixture)

This repository is generated by `patchkit.demo.sglang` for patchkit's tests.
Its layout follows SGLang, a fast serving framework for large language and
vision-language models; its code is synthetic and does not run.

## Layout

- `python/sglang/srt/models/`: model implementations (DeepSeek-V2/V3, EAGLE-3 draft heads, ...)
- `python/sglang/srt/speculative/`: speculative decoding workers
- `python/sglang/srt/model_executor/`: the model runner and CUDA graphs
- `python/sglang/srt/distributed/`: process groups and communicators

## Install

    pip install sglang
"""

_PYPROJECT = """\
[project]
name = "sglang-fixture"
description = "Synthetic SGLang-shaped tree for patchkit tests"
requires-python = ">=3.10"
dynamic = ["version"]

[tool.setuptools_scm]
root = ".."
"""


def build_sglang_history(path: Path) -> History:
    """Write the SGLang-shaped repository at ``path`` (non-bare, ``main`` checked out).

    Commit ids are the same on every build (fixed authors, dates and
    contents).  ``LABELS`` documents every label of the returned ``History``.
    """
    builder = HistoryBuilder(Path(path))
    tree: dict[str, str] = {}

    def commit(
        label: str,
        day: str,
        time: str,
        who: str,
        subject: str,
        changes: Mapping[str, Callable[[str], str] | str],
        body: str = "",
    ) -> None:
        files = {}
        for name, change in changes.items():
            files[name] = change(tree[name]) if callable(change) else change
        tree.update(files)
        message = subject + ("\n\n" + body if body else "") + "\n"
        builder.commit(label, message, files, when=_at(day, time), author=_AUTHORS[who])

    # -- before Kimi-K2.5 ------------------------------------------------------
    commit(
        "root",
        "2026-01-12",
        "08:30",
        "mira",
        "Initial import of the runtime layout",
        {
            README: _README,
            PYPROJECT: _PYPROJECT,
            DEEPSEEK_V2: _DEEPSEEK_V2,
            MODEL_RUNNER: _MODEL_RUNNER,
            PARALLEL_STATE: _PARALLEL_STATE,
            PYNCCL: _PYNCCL,
            PCG_CONTEXT: _PCG_CONTEXT,
        },
    )
    commit(
        "add-eagle",
        "2026-01-14",
        "15:10",
        "kenji",
        "[Spec] EAGLE worker and EAGLE-3 Llama draft model (#16820)",
        {
            EAGLE_WORKER: _EAGLE_WORKER,
            LLAMA_EAGLE3: _LLAMA_EAGLE3,
        },
    )
    commit(
        "docs-install",
        "2026-01-19",
        "11:45",
        "lena",
        "docs: refresh the install section (#17512)",
        {
            README: lambda t: _edit(
                t,
                (
                    "    pip install sglang\n",
                    "    pip install --upgrade pip\n    pip install sglang\n\n"
                    "See the documentation for CUDA, ROCm and NPU builds.\n",
                ),
            ),
        },
    )
    commit(
        "release-0.5.8",
        "2026-01-23",
        "06:00",
        "mira",
        "Release v0.5.8 (#17701)",
        {
            README: lambda t: _edit(t, ("## Install\n", "## Install\n\nLatest release: v0.5.8 (2026-01-23).\n")),
        },
    )
    commit(
        "dsv2-router-fp32",
        "2026-01-25",
        "13:20",
        "jonas",
        "[DeepSeek] compute router logits in fp32 (#17740)",
        {
            DEEPSEEK_V2: lambda t: _edit(
                t,
                (
                    "        return F.linear(hidden_states, self.weight, None)\n",
                    "        # fp32 logits: in bf16, near-tied experts swap places in the top-k.\n"
                    "        return F.linear(hidden_states.float(), self.weight.float(), None)\n",
                ),
            ),
        },
    )

    # -- Kimi-K2.5 arrives ---------------------------------------------------------
    commit(
        "add-kimi",
        "2026-01-27",
        "02:57",
        "priya",
        "model: support Kimi-K2.5 (#17789)",
        {
            KIMI_K25: _KIMI_K25,
            KIMI_CONFIG: _KIMI_CONFIG,
            README: lambda t: _edit(
                t,
                ("(DeepSeek-V2/V3, EAGLE-3 draft heads, ...)", "(DeepSeek-V2/V3, Kimi-K2.5, EAGLE-3 draft heads, ...)"),
            ),
        },
        body="Kimi-K2.5: MoonViT-3D vision tower, projector and a DeepSeek-V3 text model.",
    )
    commit(
        "kimi-dp-reduce",
        "2026-02-02",
        "10:05",
        "jonas",
        "fix: avoid double reduce in VLM dp attention (#17991)",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    "            proj_bias=attn_bias,\n            quant_config=quant_config,\n",
                    "            proj_bias=attn_bias,\n"
                    "            # The tower's output is gathered once, after the last block;\n"
                    "            # reducing inside every block as well counted it twice under DP.\n"
                    "            skip_output_reduce=True,\n"
                    "            quant_config=quant_config,\n",
                ),
            ),
        },
    )
    commit(
        "pynccl-group-calls",
        "2026-02-03",
        "16:40",
        "kenji",
        "[Comm] pynccl: group_start / group_end (#18020)",
        {
            PYNCCL: lambda t: (
                t
                + (
                    "\n"
                    "    def group_start(self):\n"
                    '        """Batch the following NCCL calls into one launch (until group_end)."""\n'
                    "        self.nccl.ncclGroupStart()\n"
                    "\n"
                    "    def group_end(self):\n"
                    "        self.nccl.ncclGroupEnd()\n"
                )
            ),
        },
    )
    commit(
        "verify-nvtx",
        "2026-02-05",
        "09:30",
        "kenji",
        "[Spec] Trace the EAGLE verify forward with an NVTX range (#18057)",
        {
            EAGLE_WORKER: _verify_nvtx,
        },
    )
    commit(
        "kimi-nvfp4",
        "2026-02-08",
        "12:00",
        "priya",
        "fix: fix NVFP4 Kimi-K2.5 weight mapping and exclude list (#18370)",
        {KIMI_K25: _kimi_nvfp4},
    )
    commit(
        "kimi-quant-config",
        "2026-02-09",
        "07:15",
        "priya",
        "[Kimi-K2.5] Fix missing `quant_config` in `KimiK25` (#18440)",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    "        self.config = config\n        self.vision_tower = ",
                    "        self.config = config\n        self.quant_config = quant_config\n        self.vision_tower = ",
                ),
                (
                    "DeepseekV3ForCausalLM(config.text_config, quant_config)\n",
                    "DeepseekV3ForCausalLM(\n"
                    '            config.text_config, quant_config, prefix=add_prefix("language_model", prefix)\n'
                    "        )\n",
                ),
            ),
        },
    )
    commit(
        "kimi-builtin-generics",
        "2026-02-11",
        "14:50",
        "lena",
        "refactor(kimi-k25): use builtin generics in the vision helpers (#18502)",
        {
            KIMI_K25: lambda t: _edit(
                _edit_all(t, "List[", "list["),
                (
                    "from typing import Iterable, List, Optional, Sequence, Tuple\n",
                    "from typing import Iterable, Optional, Sequence, Tuple\n",
                ),
            ),
        },
    )
    commit(
        "runner-eagle3-layers",
        "2026-02-13",
        "10:10",
        "kenji",
        "[Spec] Use the configured EAGLE-3 layers in the dummy run (#18566)",
        {
            MODEL_RUNNER: lambda t: _edit(
                t,
                (
                    "            self.model.set_eagle3_layers_to_capture()\n",
                    "            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)\n",
                ),
            ),
        },
    )
    commit(
        "kimi-dp-vit",
        "2026-02-18",
        "03:25",
        "priya",
        "Add DP ViT support for Kimi K2.5 (#18689)",
        {KIMI_K25: _kimi_dp_vit},
    )
    commit(
        "fix-pcg-moe",
        "2026-02-19",
        "08:48",
        "jonas",
        "Fix PCG MoE Error (#17739)",
        {
            PYNCCL: _pynccl_outplace,
            PARALLEL_STATE: _parallel_state_pcg,
            PCG_CONTEXT: lambda t: (
                t
                + (
                    "\n\n"
                    "def is_in_piecewise_cuda_graph() -> bool:\n"
                    '    """True while a piecewise CUDA graph is being captured or replayed."""\n'
                    "    return _IN_PIECEWISE_CUDA_GRAPH\n"
                )
            ),
        },
    )
    commit(
        "eagle-draft-extend",
        "2026-02-20",
        "17:05",
        "kenji",
        "[Spec] Skip the draft prefill for idle batches (#18790)",
        {
            EAGLE_WORKER: lambda t: _edit(
                t,
                (
                    '        """Run the draft model over the prompt so its KV cache matches the target\'s."""\n',
                    '        """Run the draft model over the prompt so its KV cache matches the target\'s."""\n'
                    "        if batch.forward_mode.is_idle() or hidden_states.shape[0] == 0:\n"
                    "            # An idle DP rank has nothing to prefill for the draft.\n"
                    "            return\n",
                ),
            ),
        },
    )
    commit(
        "llama-eagle3-head",
        "2026-02-23",
        "11:35",
        "lena",
        "[Spec] EAGLE-3 draft: ignore a checkpoint lm_head borrowed from the target (#18901)",
        {
            LLAMA_EAGLE3: lambda t: _edit(
                t,
                (
                    '            if "lm_head" not in name:\n',
                    '            if "lm_head" in name and self.load_lm_head_from_target:\n'
                    "                continue  # set_embed_and_head installs the target's head\n"
                    '            if "lm_head" not in name:\n',
                ),
            ),
        },
    )
    commit("kimi-pp", "2026-02-25", "06:20", "jonas", "[Fix] Kimi K2.5 support pp (#18434)", {KIMI_K25: _kimi_pp})
    commit(
        "kimi-npu",
        "2026-02-26",
        "09:55",
        "lena",
        "[NPU] support Kimi-K2.5 on NPU (#19331)",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    "from sglang.srt.utils import add_prefix\n",
                    "from sglang.srt.utils import add_prefix, is_npu\n",
                ),
                (
                    "logger = logging.getLogger(__name__)\n",
                    "logger = logging.getLogger(__name__)\n\n_is_npu = is_npu()\n",
                ),
                (
                    "@torch.compile(dynamic=True)\n",
                    "@torch.compile(dynamic=True, disable=_is_npu)  # no inductor backend on Ascend\n",
                ),
            ),
        },
    )
    branch_base = "kimi-npu"
    commit(
        "dsv2-weight-mixin",
        "2026-02-27",
        "15:00",
        "jonas",
        "[DeepSeek] move weight loading into DeepseekV2WeightLoaderMixin (#19402)",
        {DEEPSEEK_V2: _dsv2_mixin},
    )

    # -- upstream adds the hooks --------------------------------------------------
    commit(
        "hooks-upstream",
        "2026-03-03",
        "18:41",
        "priya",
        "feat: support Kimi K2.5 for Eagle3 (#19689)",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    "from typing import Iterable, Optional, Sequence, Tuple\n",
                    "from typing import Iterable, List, Optional, Sequence, Tuple\n",
                ),
                (
                    "\n\nEntryClass = [KimiK25ForConditionalGeneration]\n",
                    _UPSTREAM_EAGLE3_HOOKS + "\n\nEntryClass = [KimiK25ForConditionalGeneration]\n",
                ),
            ),
        },
        body="Draft model: AQ-MedAI/Kimi-K25-eagle3.",
    )
    commit(
        "docs-0.5.9",
        "2026-03-05",
        "05:30",
        "mira",
        "docs: install v0.5.9 (#19850)",
        {
            README: lambda t: _edit(
                t, ("Latest release: v0.5.8 (2026-01-23).", "Latest release: v0.5.9 (2026-03-05).")
            ),
        },
    )
    commit(
        "kimi-pp-range",
        "2026-03-07",
        "13:05",
        "jonas",
        "Fix Kimi K2.5 PP layer range exposure for PD disaggregation (#19959)",
        {KIMI_K25: _kimi_pp_range},
    )
    commit(
        "kimi-conv-layers",
        "2026-03-15",
        "10:40",
        "lena",
        "VLM: add Conv2dLayer/Conv3dLayer to fix PyTorch 2.9.1 CuDNN Conv3d (#20282)",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    "from sglang.srt.layers.attention.vision import VisionAttention\n",
                    "from sglang.srt.layers.attention.vision import VisionAttention\n"
                    "from sglang.srt.layers.conv import Conv2dLayer\n",
                ),
                (
                    "self.proj = nn.Conv2d(in_dim, out_dim,",
                    "self.proj = Conv2dLayer(in_dim, out_dim,",
                ),
            ),
        },
    )
    commit(
        "kimi-pcg",
        "2026-03-18",
        "16:25",
        "kenji",
        "vlm: support piecewise cuda graph for Kimi-K2.5 (#20747)",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    '    """Kimi-K2.5: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""\n',
                    '    """Kimi-K2.5: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""\n\n'
                    "    # Only the text model is captured; the vision tower runs eagerly.\n"
                    "    supports_piecewise_cuda_graph = True\n",
                ),
            ),
            MODEL_RUNNER: lambda t: _edit(
                t,
                (
                    "        self.init_device_graphs()\n",
                    "        self.init_device_graphs()\n"
                    '        self.piecewise_cuda_graph = bool(getattr(self.model, "supports_piecewise_cuda_graph", False))\n',
                ),
            ),
        },
    )

    # -- side branch: the class is renamed (not merged) ---------------------------
    builder.start_branch(RENAME_BRANCH, branch_base)
    tree.clear()
    tree.update(builder.tree(branch_base))  # type: ignore[arg-type]

    def on_branch(
        label: str, day: str, time: str, who: str, subject: str, changes: Mapping[str, Callable[[str], str]]
    ) -> None:
        files = {name: change(tree[name]) for name, change in changes.items()}
        tree.update(files)
        builder.commit(label, subject + "\n", files, branch=RENAME_BRANCH, when=_at(day, time), author=_AUTHORS[who])

    on_branch(
        "rename-kimi",
        "2026-03-02",
        "12:00",
        "lena",
        "Rename Kimi model class to KimiK25VLForConditionalGeneration",
        {
            KIMI_K25: lambda t: _edit_all(t, "KimiK25ForConditionalGeneration", "KimiK25VLForConditionalGeneration"),
        },
    )
    on_branch(
        "rename-kimi-docs",
        "2026-03-04",
        "08:20",
        "lena",
        "kimi: call the model Kimi-K2.5 VL in docstrings and logs",
        {
            KIMI_K25: lambda t: _edit(
                t,
                (
                    '    """Kimi-K2.5: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""\n',
                    '    """Kimi-K2.5 VL: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""\n',
                ),
                (
                    '"Kimi-K2.5: skipping unexpected vision weight %s"',
                    '"Kimi-K2.5 VL: skipping unexpected vision weight %s"',
                ),
            ),
        },
    )

    for name, label in TAGS.items():
        builder.tag(name, label)
    return builder.build(checkout=MAIN)


# ---------------------------------------------------------------------------
# The larger edits, one function per commit.
# ---------------------------------------------------------------------------


def _verify_nvtx(text: str) -> str:
    """verify-nvtx: the one change to EAGLEWorker.verify (and what it needs)."""
    return _edit(
        text,
        (
            "import time\nfrom typing import",
            "import time\nfrom contextlib import nullcontext\nfrom typing import",
        ),
        (
            "        self.enable_nan_detection = server_args.enable_nan_detection\n",
            "        self.enable_nan_detection = server_args.enable_nan_detection\n"
            '        self.trace_verify = bool(getattr(server_args, "enable_verify_trace", False))\n',
        ),
        (
            "    def verify(self, batch: ScheduleBatch, spec_info: EagleVerifyInput):\n",
            "    def verify_trace_range(self, name: str):\n"
            '        """An NVTX range for one verify phase when tracing is on, else a no-op context."""\n'
            "        if self.trace_verify:\n"
            "            return torch.cuda.nvtx.range(name)\n"
            "        return nullcontext()\n"
            "\n"
            "    def verify(self, batch: ScheduleBatch, spec_info: EagleVerifyInput):\n",
        ),
        (
            "        # Forward\n"
            "        batch_result = self.target_worker.forward_batch_generation(\n"
            "            model_worker_batch, is_verify=True\n"
            "        )\n",
            "        num_draft_tokens = spec_info.draft_token_num\n"
            "        if self.trace_verify:\n"
            "            logger.debug(\n"
            '                "verify: %d requests x %d draft tokens", len(batch.reqs), num_draft_tokens\n'
            "            )\n"
            "\n"
            "        # Forward.  The range names the target pass in Nsight Systems and\n"
            "        # torch profiler traces, next to the draft steps.\n"
            '        with self.verify_trace_range("eagle_verify_target_forward"):\n'
            "            batch_result = self.target_worker.forward_batch_generation(\n"
            "                model_worker_batch,\n"
            "                is_verify=True,\n"
            "            )\n",
        ),
    )


def _kimi_nvfp4(text: str) -> str:
    return _edit(
        text,
        (
            "from sglang.srt.models.kimi_vl_moonvit import MLP2\n",
            "from sglang.srt.models.kimi_vl_moonvit import MLP2\nfrom sglang.srt.models.utils import WeightsMapper\n",
        ),
        (
            '    """Kimi-K2.5: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""\n',
            '    """Kimi-K2.5: MoonViT-3D vision tower + projector + DeepSeek-V3 text model."""\n\n'
            "    # The NVFP4 checkpoint (nvidia/Kimi-K2.5-NVFP4) names text layers without\n"
            '    # the inner "model." of DeepseekV3ForCausalLM.\n'
            "    hf_to_sglang_mapper = WeightsMapper(\n"
            '        orig_to_new_prefix={"language_model.layers.": "language_model.model.layers."}\n'
            "    )\n",
        ),
        (
            "        vision_weights = []\n        language_weights = []\n        for name, tensor in weights:\n",
            "        vision_weights = []\n        language_weights = []\n"
            "        for name, tensor in self.hf_to_sglang_mapper.apply(weights):\n"
            '            if name.endswith((".input_scale", ".weight_scale_2")) and name.startswith("vision_tower."):\n'
            "                continue  # the vision tower stays unquantized in NVFP4 checkpoints\n",
        ),
    )


def _kimi_dp_vit(text: str) -> str:
    return _edit(
        text,
        (
            "from sglang.srt.utils import add_prefix\n",
            "from sglang.srt.multimodal.mm_utils import run_dp_sharded_mrope_vision_model\n"
            "from sglang.srt.server_args import get_global_server_args\n"
            "from sglang.srt.utils import add_prefix\n",
        ),
        (
            '    def __init__(self, config: KimiK25VisionConfig, quant_config: Optional[QuantizationConfig] = None, prefix: str = ""):\n'
            "        super().__init__()\n        config = deepcopy(config)\n",
            "    def __init__(\n"
            "        self,\n"
            "        config: KimiK25VisionConfig,\n"
            "        quant_config: Optional[QuantizationConfig] = None,\n"
            '        prefix: str = "",\n'
            "        use_data_parallel: bool = False,\n"
            "    ):\n"
            "        super().__init__()\n        config = deepcopy(config)\n"
            "        self.use_data_parallel = use_data_parallel\n",
        ),
        (
            "        self.quant_config = quant_config\n        self.vision_tower = MoonViT3dPretrainedModel(config.vision_config)\n",
            "        self.quant_config = quant_config\n"
            "        # With --mm-enable-dp-encoder every rank encodes a share of the images.\n"
            "        self.use_data_parallel = get_global_server_args().mm_enable_dp_encoder\n"
            "        self.vision_tower = MoonViT3dPretrainedModel(\n"
            "            config.vision_config, use_data_parallel=self.use_data_parallel\n"
            "        )\n",
        ),
        (
            "        merged = vision_tower_forward_auto(self.vision_tower, pixel_values, grid_thws)\n",
            "        if self.use_data_parallel:\n"
            "            merged = run_dp_sharded_mrope_vision_model(\n"
            '                self.vision_tower, pixel_values, grid_thws.tolist(), rope_type="rope_2d"\n'
            "            )\n"
            "        else:\n"
            "            merged = vision_tower_forward_auto(self.vision_tower, pixel_values, grid_thws)\n",
        ),
    )


def _kimi_pp(text: str) -> str:
    return _edit(
        text,
        (
            "from sglang.srt.model_executor.forward_batch_info import ForwardBatch\n",
            "from sglang.srt.model_executor.forward_batch_info import ForwardBatch, PPProxyTensors\n",
        ),
        (
            "from sglang.srt.configs.kimi_k25 import KimiK25Config, KimiK25VisionConfig\n",
            "from sglang.srt.configs.kimi_k25 import KimiK25Config, KimiK25VisionConfig\n"
            "from sglang.srt.eplb.expert_location import ModelConfigForExpertLocation\n",
        ),
        (
            "        get_embedding: bool = False,\n    ):\n",
            "        get_embedding: bool = False,\n"
            "        pp_proxy_tensors: Optional[PPProxyTensors] = None,\n    ):\n",
        ),
        (
            "            positions=positions,\n        )\n",
            "            positions=positions,\n            pp_proxy_tensors=pp_proxy_tensors,\n        )\n",
        ),
        (
            "    def forward(\n        self,\n        input_ids: torch.Tensor,\n",
            "    @property\n"
            "    def start_layer(self) -> int:\n"
            "        return self.language_model.model.start_layer\n"
            "\n"
            "    @property\n"
            "    def end_layer(self) -> int:\n"
            "        return self.language_model.model.end_layer\n"
            "\n"
            "    def forward(\n        self,\n        input_ids: torch.Tensor,\n",
        ),
        (
            "        self.language_model.load_weights(language_weights)\n",
            "        self.language_model.load_weights(language_weights)\n"
            "\n"
            "    @classmethod\n"
            "    def get_model_config_for_expert_location(cls, config: KimiK25Config):\n"
            '        """Expert layout for EPLB: that of the DeepSeek-V3 text model."""\n'
            "        text = config.text_config\n"
            "        return ModelConfigForExpertLocation(\n"
            "            num_layers=text.num_hidden_layers,\n"
            "            num_logical_experts=text.n_routed_experts,\n"
            "            num_groups=text.n_group,\n"
            "        )\n",
        ),
    )


def _kimi_pp_range(text: str) -> str:
    return _edit(
        text,
        (
            "    def start_layer(self) -> int:\n        return self.language_model.model.start_layer\n",
            "    def start_layer(self) -> int:\n"
            '        """First text layer on this pipeline rank (PD disaggregation reads it)."""\n'
            '        return getattr(self.language_model, "start_layer", self.language_model.model.start_layer)\n',
        ),
        (
            "    def end_layer(self) -> int:\n        return self.language_model.model.end_layer\n",
            "    def end_layer(self) -> int:\n"
            '        """One past the last text layer on this pipeline rank."""\n'
            '        return getattr(self.language_model, "end_layer", self.language_model.model.end_layer)\n',
        ),
    )


def _pynccl_outplace(text: str) -> str:
    return _edit(
        text,
        (
            "    def all_gather(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, stream=None):\n",
            "    def outplace_all_reduce(\n"
            "        self,\n"
            "        in_tensor: torch.Tensor,\n"
            "        out_tensor: Optional[torch.Tensor] = None,\n"
            "        op: ReduceOp = ReduceOp.SUM,\n"
            "        stream=None,\n"
            "    ) -> Optional[torch.Tensor]:\n"
            '        """All-reduce into a separate output buffer (allocated if not given).\n'
            "\n"
            "        Piecewise CUDA graphs must not write into their input: the same\n"
            "        buffer is read again by the next captured piece.\n"
            '        """\n'
            "        if self.disabled:\n"
            "            return None\n"
            "        if out_tensor is None:\n"
            "            out_tensor = torch.empty_like(in_tensor)\n"
            "        self.nccl.ncclAllReduce(\n"
            "            buffer_type(in_tensor.data_ptr()),\n"
            "            buffer_type(out_tensor.data_ptr()),\n"
            "            in_tensor.numel(),\n"
            "            ncclDataTypeEnum.from_torch(in_tensor.dtype),\n"
            "            ncclRedOpTypeEnum.from_torch(op),\n"
            "            self.comm,\n"
            "            self._stream(stream),\n"
            "        )\n"
            "        return out_tensor\n"
            "\n"
            "    def all_gather(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, stream=None):\n",
        ),
    )


def _parallel_state_pcg(text: str) -> str:
    return _edit(
        text,
        (
            "import torch.distributed\n",
            "import torch.distributed\n\n"
            "from sglang.srt.compilation.piecewise_context_manager import is_in_piecewise_cuda_graph\n",
        ),
        (
            '            return "ca"\n        return None\n',
            '            return "ca"\n'
            "        if is_in_piecewise_cuda_graph() and self.pynccl_comm is not None:\n"
            "            # Inside a piecewise graph the MoE output buffer is reused: never reduce in place.\n"
            '            return "pynccl"\n'
            "        return None\n",
        ),
        (
            "            return self.ca_comm.custom_all_reduce(input_)\n",
            "            return self.ca_comm.custom_all_reduce(input_)\n"
            '        if method == "pynccl":\n'
            "            return self.pynccl_comm.outplace_all_reduce(input_)\n",
        ),
    )


def _dsv2_mixin(text: str) -> str:
    start = text.index("    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]):\n")
    end = text.index("    def get_embed_and_head(self):\n")
    method = text[start:end]
    text = text[:start] + text[end:]
    mixin = (
        "class DeepseekV2WeightLoaderMixin:\n"
        '    """Checkpoint loading shared by the DeepSeek causal LMs."""\n\n' + method.rstrip("\n") + "\n\n\n"
    )
    return _edit(
        text,
        (
            "class DeepseekV2ForCausalLM(nn.Module):\n",
            mixin + "class DeepseekV2ForCausalLM(nn.Module, DeepseekV2WeightLoaderMixin):\n",
        ),
    )
