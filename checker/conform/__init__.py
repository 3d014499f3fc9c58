"""``kvproof conform``'s engine-neutral core: walks chosen from the model, the projection
compared after each step, the exact diagnosis, the run. One adapter package per engine
(``checker/upstream/`` for SGLang, ``checker/conform/vllm/`` for vLLM) implements
``engine.Engine``; nothing here imports an engine's modules."""
