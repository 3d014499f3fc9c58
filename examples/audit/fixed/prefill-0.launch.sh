#!/usr/bin/env bash
# prefill-0: GLM-5.3 prefill, SGLang v0.5.22, Mooncake over RDMA.
# SGLANG_EXPOSE_OWN_ENV_VARS=1 makes /server_info list these under internal_states[].env_vars.
export SGLANG_EXPOSE_OWN_ENV_VARS=1
export SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1
export SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT=300
export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=300
export HF_TOKEN=hf_kvproofSECRETdoNotPrint
python -m sglang.launch_server \
  --model-path zai-org/GLM-5.3-FP8 --trust-remote-code --tp 8 \
  --context-length 1048576 --page-size 64 --mem-fraction-static 0.82 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --disaggregation-ib-device mlx5_0,mlx5_1 \
  --disaggregation-enable-kv-checksum \
  --api-key "$SGLANG_API_KEY" --host 0.0.0.0 --port 30000
