"""SGLang 0.5.9's command line for the fake server: flag names, defaults and adjustments.

`ServerArgs.add_cli_args` of 0.5.9 built from the flag table `flags_059` (all 331 options, with their types,
choices, nargs and defaults) with real CPython argparse, `prog="launch_server.py"` (what
`python3 -m sglang.launch_server` shows), so a bad flag or value fails with argparse's own text and exit status 2. Then
`ServerArgs.__post_init__`'s speculative adjustments (`sglang/srt/server_args.py` 0.5.9
`_handle_speculative_decoding`) with their bare warning lines (printed before logging is set up).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from simhost.sglang.flags_059 import FLAGS_059

SPEC_ALGOS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]
AUTO_MEM_FRACTION = 0.86


_TYPES = {"int": int, "float": float, "str": str, "json": json.loads}
# the sim reads the tensor parallel size as `ns.tp_size` (0.5.9's dest is `tensor_parallel_size`, mapped in
# `ServerArgs.from_cli_args`); the metavar keeps `--help` as 0.5.9 prints it
_DEST = {"--tensor-parallel-size": "tp_size"}


class _Deprecated(argparse.Action):
    """0.5.9's `DeprecatedAction`: no value, a warning."""

    def __init__(self, option_strings: list[str], dest: str, nargs: int = 0, **kw: object) -> None:
        super().__init__(option_strings, dest, nargs=nargs, **kw)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"The command line argument '{option_string}' is deprecated and will be removed in future versions.",
              file=sys.stderr)


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """`ServerArgs.add_cli_args` of 0.5.9: every flag of `flags_059.FLAGS_059`."""
    for f in FLAGS_059:
        kw: dict[str, Any] = {}
        dest = f.dest or _DEST.get(f.names[0])
        if dest:
            kw["dest"] = dest
            kw["metavar"] = None if f.kind in ("switch", "deprecated") else f.names[0][2:].replace("-", "_").upper()
        if f.kind == "switch":
            kw["action"] = "store_true"
            kw.pop("metavar", None)
        elif f.kind == "deprecated":
            kw["action"] = _Deprecated
            kw.pop("metavar", None)
        else:
            kw["type"] = _TYPES[f.kind]
            kw["default"] = f.default
            if f.choices:
                kw["choices"] = list(f.choices)
                kw.pop("metavar", None)
            if f.nargs is not None:
                kw["nargs"] = f.nargs
            if f.required:
                kw["required"] = True
        parser.add_argument(*f.names, **kw)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="launch_server.py")
    add_cli_args(p)
    return p


@dataclass
class Adjusted:
    """The arguments after `__post_init__`, and the bare warnings it printed (in order)."""

    ns: argparse.Namespace
    warnings: list[str]

    @property
    def spec(self) -> bool:
        return self.ns.speculative_algorithm is not None

    @property
    def steps(self) -> int:
        return int(self.ns.speculative_num_steps or 0) if self.spec else 0

    @property
    def draft_tokens(self) -> int:
        return int(self.ns.speculative_num_draft_tokens or 1) if self.spec else 1


def adjust(ns: argparse.Namespace) -> Adjusted:
    warnings: list[str] = []
    if ns.served_model_name is None:
        ns.served_model_name = ns.model_path
    if ns.tokenizer_path is None:
        ns.tokenizer_path = ns.model_path
    if ns.mem_fraction_static is None:
        ns.mem_fraction_static = AUTO_MEM_FRACTION
    if ns.chunked_prefill_size is None:
        ns.chunked_prefill_size = 16384
    if ns.speculative_algorithm is not None:
        if ns.max_running_requests is None:
            ns.max_running_requests = 48
            warnings.append("Max running requests is reset to 48 for speculative decoding. You can override this "
                            "by explicitly setting --max-running-requests.")
        ns.disable_overlap_schedule = True
        warnings.append("Overlap scheduler is disabled when spec v2 is off or using unsupported speculative "
                        "algorithm. You can set env SGLANG_ENABLE_SPEC_V2=True to enable the experimental "
                        "overlap scheduler. ")
        if ns.speculative_num_steps is None:
            ns.speculative_num_steps = 3
        if ns.speculative_eagle_topk is None:
            ns.speculative_eagle_topk = 1
        if ns.speculative_num_draft_tokens is None:
            ns.speculative_num_draft_tokens = ns.speculative_num_steps + 1
        if ns.speculative_eagle_topk == 1 and ns.speculative_num_draft_tokens != ns.speculative_num_steps + 1:
            warnings.append("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                            "speculative_eagle_topk == 1")
            ns.speculative_num_draft_tokens = ns.speculative_num_steps + 1
    return Adjusted(ns=ns, warnings=warnings)


def server_args_repr(ns: argparse.Namespace) -> str:
    """`server_args=ServerArgs(...)` as `logger.info(f"{server_args=}")` prints it (one long line)."""
    fields = dict(vars(ns))
    extra = {"skip_tokenizer_init": False, "modelopt_quant": None, "enable_fp32_lm_head": False,
             "device": "cuda", "tp_size": ns.tp_size, "gpu_id_step": 1, "base_gpu_id": 0,
             "enable_dp_attention": False, "enable_dp_lm_head": False, "max_queued_requests": None,
             "sleep_on_idle": False, "show_time_cost": False, "crash_dump_folder": None,
             "bucket_time_to_first_token": None, "bucket_inter_token_latency": None,
             "bucket_e2e_request_latency": None, "collect_tokens_histogram": False,
             "prompt_tokens_buckets": None, "generation_tokens_buckets": None, "gc_warning_threshold_secs": 0.0,
             "enable_request_time_stats_logging": False, "kv_events_config": None, "enable_trace": False,
             "file_storage_path": "sglang_storage", "enable_cache_report": False, "reasoning_parser": None,
             "lora_paths": None, "max_loras_per_batch": 8, "lora_backend": "triton", "grammar_backend": "xgrammar",
             "mm_attention_backend": None, "speculative_token_map": None, "speculative_attention_mode": "prefill",
             "ep_num_redundant_experts": 0, "ep_dispatch_algorithm": "static", "init_expert_location": "trivial",
             "enable_eplb": False, "eplb_algorithm": "auto", "eplb_rebalance_num_iterations": 1000,
             "expert_distribution_recorder_mode": None, "enable_hierarchical_cache": False,
             "hicache_ratio": 2.0, "hicache_size": 0, "hicache_write_policy": "write_through",
             "hicache_io_backend": "kernel", "hicache_mem_layout": "layer_first", "hicache_storage_backend": None,
             "cpu_offload_gb": 0, "offload_group_size": -1, "offload_num_in_group": 1,
             "offload_prefetch_step": 1, "offload_mode": "cpu", "disable_chunked_prefix_cache": False,
             "disable_custom_all_reduce": False, "enable_mscclpp": False, "enable_nan_detection": False,
             "enable_p2p_check": False, "triton_attention_reduce_in_fp32": False,
             "triton_attention_num_kv_splits": 8, "num_continuous_decode_steps": 1,
             "delete_ckpt_after_loading": False, "enable_memory_saver": False, "allow_auto_truncate": False,
             "enable_custom_logit_processor": False, "flashinfer_mla_disable_ragged": False,
             "disable_shared_experts_fusion": False, "disable_chunked_prefix_cache_": False,
             "disable_fast_image_processor": False, "enable_return_hidden_states": False,
             "scheduler_recv_interval": 1, "numa_node": None, "debug_tensor_dump_output_folder": None,
             "debug_tensor_dump_input_file": None, "debug_tensor_dump_inject": False,
             "disaggregation_mode": "null", "disaggregation_transfer_backend": "mooncake",
             "disaggregation_bootstrap_port": 8998, "disaggregation_decode_tp": None,
             "disaggregation_decode_dp": None, "disaggregation_prefill_pp": 1, "disaggregation_ib_device": None,
             "num_reserved_decode_tokens": 512, "pdlb_url": None, "custom_weight_loader": [],
             "weight_loader_disable_mmap": False, "enable_pdmux": False, "sm_group_num": 3}
    more = ("enable_lora max_lora_rank lora_target_modules max_loaded_loras lora_eviction_policy "
            "enable_double_sparsity ds_channel_config_path ds_heavy_channel_num ds_heavy_token_num "
            "ds_heavy_channel_type ds_sparse_decode_threshold tool_server enable_deterministic_inference "
            "rl_on_policy_target enable_dynamic_batch_tokenizer dynamic_batch_tokenizer_batch_size "
            "dynamic_batch_tokenizer_batch_timeout disable_outlines_disk_cache constrained_json_whitespace_pattern "
            "constrained_json_disable_any_whitespace dist_timeout download_dir log_requests_level crash_on_nan "
            "uvicorn_access_log_exclude_prefixes enable_metrics_for_all_schedulers "
            "tokenizer_metrics_custom_labels_header admin_api_key weight_version hf_chat_template_name "
            "completion_template sampling_defaults load_balance_method enable_multimodal "
            "limit_mm_data_per_request enable_mm_global_cache moe_a2a_backend moe_dense_tp_size "
            "flashinfer_mxfp4_moe_precision enable_flashinfer_allreduce_fusion deepep_mode deepep_config "
            "enable_two_batch_overlap enable_single_batch_overlap tbo_token_distribution_threshold "
            "enable_torch_compile_debug_mode torch_compile_max_bs piecewise_cuda_graph_max_tokens "
            "enable_piecewise_cuda_graph piecewise_cuda_graph_tokens torchao_config enable_profile_cuda_graph "
            "enable_cudagraph_gc cuda_graph_bs disable_cuda_graph_padding enable_layerwise_nvtx_marker "
            "enable_memory_saver enable_weights_cpu_backup allow_auto_truncate enable_return_routed_experts "
            "speculative_draft_model_revision speculative_draft_load_format speculative_moe_runner_backend "
            "speculative_moe_a2a_backend speculative_draft_attention_backend speculative_ngram_min_match_window_size "
            "speculative_ngram_max_match_window_size speculative_ngram_min_bfs_breadth "
            "speculative_ngram_max_bfs_breadth speculative_ngram_match_type speculative_ngram_branch_length "
            "speculative_ngram_capacity mamba_full_memory_ratio mamba_scheduler_strategy mamba_track_interval "
            "hicache_storage_prefetch_policy hicache_storage_backend_extra_config enable_lmcache "
            "kt_weight_path kt_method kt_cpuinfer kt_threadpool_count kt_num_gpu_experts "
            "enable_request_time_stats_logging export_metrics_to_file export_metrics_to_file_dir "
            "multi_item_scoring_delimiter enable_priority_scheduling abort_on_priority_when_disabled "
            "schedule_low_priority_values_first priority_scheduling_preemption_threshold "
            "remote_instance_weight_loader_seed_instance_ip remote_instance_weight_loader_seed_instance_service_port "
            "remote_instance_weight_loader_send_weights_group_ports enable_dp_attention_local_control_broadcast "
            "decrypted_config_file decrypted_draft_config_file mm_max_concurrent_calls mm_per_request_timeout "
            "enable_broadcast_mm_inputs_process mm_process_config enable_fused_qk_norm_rope "
            "enable_precise_embedding_interpolation forward_hooks enable_elastic_expert_backup")
    for key in more.split():
        fields.setdefault(key, None)
    for key, value in extra.items():
        fields.setdefault(key, value)
    body = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return f"server_args=ServerArgs({body})"
