"""An SGLang-shaped base tree and a hand edit of it, for the capture tests.

The edit is what a Kimi-K2.5 + EAGLE-3 team does by hand: the EAGLE-3 hooks
on the Kimi model, the verify-timing statements, a changed default, a moved
import, a CMake and a YAML edit, a deleted line and an import added in the
middle of an import block.  Tests only, never the runtime package.
"""

from __future__ import annotations

from helpers import d

KIMI = "python/sglang/srt/models/kimi_k25.py"
EAGLE = "python/sglang/srt/speculative/eagle_worker.py"
DEEPSEEK = "python/sglang/srt/models/deepseek_v2.py"
SERVER_ARGS = "python/sglang/srt/server_args.py"
RUNNER = "python/sglang/srt/model_executor/model_runner.py"
REGISTRY = "python/sglang/srt/models/registry.py"
CMAKE = "sgl-kernel/CMakeLists.txt"
YAML = "benchmark/kimi/serve.yaml"

BASE: dict[str, str] = {
    KIMI: d('''
        """Kimi-K2.5 multimodal model."""

        import logging
        from typing import Iterable, Optional, Tuple

        import torch
        from torch import nn

        from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM
        from sglang.srt.utils import add_prefix

        logger = logging.getLogger(__name__)


        class KimiK25ForConditionalGeneration(nn.Module):
            def __init__(self, config, quant_config=None, prefix: str = "") -> None:
                super().__init__()
                self.config = config
                self.language_model = DeepseekV3ForCausalLM(
                    config.text_config, quant_config, prefix=add_prefix("language_model", prefix)
                )

            def forward(self, input_ids, positions, forward_batch):
                return self.language_model(input_ids, positions, forward_batch)

            def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]):
                self.language_model.load_weights(weights)


        EntryClass = [KimiK25ForConditionalGeneration]
    '''),
    EAGLE: d("""
        import logging
        from typing import List

        import torch

        from sglang.srt.managers.schedule_batch import ScheduleBatch

        logger = logging.getLogger(__name__)


        class EAGLEWorker:
            def __init__(self, server_args, target_worker):
                self.server_args = server_args
                self.target_worker = target_worker
                self.speculative_num_steps = server_args.speculative_num_steps

            def verify(self, batch: ScheduleBatch, spec_info):
                model_worker_batch = batch.get_model_worker_batch()
                batch_result = self.target_worker.forward_batch_generation(model_worker_batch, is_verify=True)
                logits_output = batch_result.logits_output
                return logits_output

            def draft(self, batch: ScheduleBatch, topk: int = 1) -> List[torch.Tensor]:
                return [batch.input_ids] * topk
    """),
    DEEPSEEK: d("""
        from typing import Optional

        import torch
        from torch import nn

        from sglang.srt.utils import DeepEPMode, add_prefix, is_cuda

        _is_cuda = is_cuda()


        class DeepseekV3ForCausalLM(nn.Module):
            def __init__(self, config, quant_config=None, prefix: str = "") -> None:
                super().__init__()
                self.deepep_mode = DeepEPMode.auto
                self.prefix = add_prefix("model", prefix)

            def get_embed_and_head(self):
                return self.model.embed_tokens.weight, self.lm_head.weight
    """),
    SERVER_ARGS: d("""
        import dataclasses
        import os

        os.environ.setdefault("SGLANG_LEGACY_SCHEDULER", "0")
        DEFAULT_PORT = 30000


        @dataclasses.dataclass
        class ServerArgs:
            model_path: str
            port: int = DEFAULT_PORT
    """),
    RUNNER: d("""
        import logging
        import os
        from typing import Optional

        logger = logging.getLogger(__name__)


        class ModelRunner:
            def __init__(self, model_config):
                self.model_config = model_config
    """),
    REGISTRY: d("""
        _MODELS = [
            "deepseek_v2",
            "kimi_k25",
        ]
    """),
    CMAKE: d("""
        cmake_minimum_required(VERSION 3.26)
        project(sgl-kernel LANGUAGES CXX CUDA)

        set(CMAKE_CUDA_ARCHITECTURES "90")
        option(SGL_KERNEL_ENABLE_FP4 "Enable FP4 kernels" OFF)
    """),
    YAML: d("""
        model: moonshotai/Kimi-K2.5
        serve:
          tp: 8
          port: 30000
        speculative:
          algorithm: NONE
    """),
}

HOOKS = """
    def get_embed_and_head(self):
        return self.language_model.get_embed_and_head()

    def set_embed_and_head(self, embed, head):
        self.language_model.set_embed_and_head(embed, head)

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)
"""

TIMING_HELPERS = """

_PATCHKIT_VERIFY_TIMING = os.environ.get("PATCHKIT_EAGLE3_VERIFY_TIMING") == "1"


def _patchkit_verify_timer_start():
    return time.perf_counter() if _PATCHKIT_VERIFY_TIMING else None


def _patchkit_verify_timer_stop(start):
    if start is not None:
        print(f"[patchkit] eagle3 verify_ms={(time.perf_counter() - start) * 1e3:.1f}", file=sys.stderr)
"""


def edited() -> dict[str, str]:
    """BASE, edited by hand."""
    tree = dict(BASE)
    tree[KIMI] = (
        tree[KIMI]
        .replace(
            "from sglang.srt.utils import add_prefix\n",
            "from sglang.srt.utils import add_prefix\nfrom typing import List\n",
        )
        .replace(
            "        self.language_model.load_weights(weights)\n",
            "        self.language_model.load_weights(weights)\n" + HOOKS,
        )
    )
    tree[EAGLE] = (
        tree[EAGLE]
        .replace(
            "from sglang.srt.managers.schedule_batch import ScheduleBatch\n",
            "from sglang.srt.managers.schedule_batch import ScheduleBatch\nimport os\nimport sys\nimport time\n",
        )
        .replace("logger = logging.getLogger(__name__)\n", "logger = logging.getLogger(__name__)\n" + TIMING_HELPERS)
        .replace(
            "        batch_result = self.target_worker",
            "        _patchkit_t0 = _patchkit_verify_timer_start()\n        batch_result = self.target_worker",
        )
        .replace(
            "        logits_output = batch_result.logits_output\n",
            "        _patchkit_verify_timer_stop(_patchkit_t0)\n        logits_output = batch_result.logits_output\n",
        )
        .replace("topk: int = 1", "topk: int = 4")
    )
    tree[DEEPSEEK] = tree[DEEPSEEK].replace(
        "from sglang.srt.utils import DeepEPMode, add_prefix, is_cuda\n",
        "from sglang.srt.utils import add_prefix, is_cuda\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n",
    )
    tree[SERVER_ARGS] = tree[SERVER_ARGS].replace('os.environ.setdefault("SGLANG_LEGACY_SCHEDULER", "0")\n', "")
    tree[RUNNER] = tree[RUNNER].replace("import logging\nimport os\n", "import logging\nimport json\nimport os\n")
    tree[REGISTRY] = tree[REGISTRY].replace('    "kimi_k25",\n', '    "kimi_k25",\n    "kimi_k25_eagle3",\n')
    tree[CMAKE] = tree[CMAKE].replace('"Enable FP4 kernels" OFF', '"Enable FP4 kernels" ON')
    tree[YAML] = tree[YAML].replace("algorithm: NONE", "algorithm: EAGLE3\n  num_steps: 3")
    return tree
