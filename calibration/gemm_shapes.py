#!/usr/bin/env python3
"""The GEMMs of wallsim run configs, as a shapes file for `gemm_bench --shapes`.

    calibration/gemm_shapes.py CONFIG... > shapes.txt

For each config's transformer layer it lists the linear layers' GEMMs of one micro-batch on one
rank, in wallsim's (M, N, K) convention (M rows = tokens, N outputs, K inputs), each pass:
forward (M, N, K), data gradient (M, K, N), weight gradient (K, N, M). Tokens per rank are
seq_len / cp x micro_batch; tensor parallelism splits the column-parallel outputs (QKV, FC1,
logits) and the row-parallel inputs (projection, FC2). Mixture-of-experts layers add grouped
lines "m n k batch": batch = experts per rank (experts / ep), m = the balanced tokens per expert
(tokens x topk / experts, times ep for the tokens an expert receives from its EP group), expert
FFN split by etp. Multi-latent attention is listed as its dense projections. Shapes are sorted
and listed once. Model files are resolved relative to the config, as wallsim does.
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def model_of(config, config_path):
    model = config["model"]
    if isinstance(model, str):
        return load(os.path.join(os.path.dirname(config_path), model))
    return model


def passes(m, n, k):
    return [(m, n, k), (m, k, n), (k, n, m)]


def shapes_of(config_path):
    config = load(config_path)
    model = model_of(config, config_path)
    parallel = config.get("parallel", {})
    training = config.get("training", {})
    tp = parallel.get("tp", 1)
    cp = parallel.get("cp", 1)
    ep = parallel.get("ep", 1)
    etp = parallel.get("etp", tp)
    tokens = training["seq_len"] // cp * training.get("micro_batch", 1)
    h = model["hidden"]
    heads = model["heads"]
    kv_heads = model.get("kv_heads", heads)
    head_dim = model.get("head_dim", h // heads)
    gated = 2 if model.get("activation", "gelu") in ("swiglu", "geglu") else 1
    dense, grouped = set(), set()

    def linear(n, k):
        dense.update(passes(tokens, n, k))

    mla = model.get("mla")
    if mla:
        q_head = mla["qk_head_dim"] + mla["qk_rope_head_dim"]
        linear(mla["q_lora_rank"] + mla["kv_lora_rank"] + mla["qk_rope_head_dim"], h)
        linear(heads * q_head // tp, mla["q_lora_rank"])
        linear(heads * (mla["qk_head_dim"] + mla["v_head_dim"]) // tp, mla["kv_lora_rank"])
        linear(h, heads * mla["v_head_dim"] // tp)
    else:
        linear((heads + 2 * kv_heads) * head_dim // tp, h)
        linear(h, heads * head_dim // tp)
    linear(gated * model["ffn_hidden"] // tp, h)
    linear(h, model["ffn_hidden"] // tp)
    linear(model["vocab"] // tp, h)
    moe = model.get("moe")
    if moe:
        experts = moe["experts"]
        local = max(1, experts // ep)
        rows = max(1, tokens * moe["topk"] // experts * ep)
        ffn = moe["ffn_hidden"] // etp
        for m, n, k in passes(rows, gated * ffn, h) + passes(rows, h, ffn):
            grouped.add((m, n, k, local))
        shared = moe.get("shared_ffn_hidden")
        if shared:
            linear(gated * shared // tp, h)
            linear(h, shared // tp)
    return dense, grouped


def main(paths):
    if not paths:
        sys.stderr.write(__doc__)
        return 2
    dense, grouped = set(), set()
    for path in paths:
        try:
            d, g = shapes_of(path)
        except (OSError, KeyError, ValueError) as e:
            sys.stderr.write(f"gemm_shapes: {path}: {e}\n")
            return 2
        dense |= d
        grouped |= g
    print("# m n k [batch]: wallsim (M, N, K) per pass; from " + " ".join(
        os.path.basename(p) for p in paths))
    for m, n, k in sorted(dense):
        print(m, n, k)
    for m, n, k, b in sorted(grouped):
        print(m, n, k, b)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
