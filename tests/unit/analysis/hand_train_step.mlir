// A hand-written mixed-precision training step (docs/training-ir.md conventions), small
// enough to account by hand: tests/unit/analysis/test_accounting_hand_step.py derives
// its FLOPs and memory with B=2, S=4 and the config below.
//
// forward:   embedding -> 2 layers (x + attention(reshape(x W))) saving each layer's
//            input and its attention input -> lm head -> cross-entropy
// backward:  vjp of the loss, lm-head grads, a reverse repeat scanning the saved
//            activations, the embedding's vjp; fp32 "grad" states accumulate in place
// optimizer: AdamW on fp32 master weights, bf16 weights written back, grads zeroed

!ids = !stg.tensor<[B, S], i64>
!act = !stg.tensor<[B, S, H], bf16>
!heads = !stg.tensor<[B, S, N, (H/N)], bf16>
!logits = !stg.tensor<[B, S, V], f32>
!logits16 = !stg.tensor<[B, S, V], bf16>
!table = !stg.tensor<[V, H], bf16>
!table32 = !stg.tensor<[V, H], f32>
!w = !stg.tensor<[H, H], bf16>
!w32 = !stg.tensor<[H, H], f32>
!scalar = !stg.tensor<[], f32>
!xs = !stg.tensor<[L, B, S, H], bf16>
!qs = !stg.tensor<[L, B, S, N, (H/N)], bf16>

builtin.module attributes {stg.model = "hand-step", stg.config = {H = 8 : i64, N = 2 : i64, V = 16 : i64, L = 2 : i64}} {
  func.func @train_step() -> !scalar {
    %loss, %ids, %labels, %xl, %logits, %xs, %qs = stg.phase forward {
      %i = stg.input "input_ids" : !ids
      %t = stg.input "labels" : !ids
      %emb = stg.param "model.embed_tokens.weight" : !table
      %x0 = stg.embedding %emb, %i : !table, !ids -> !act
      %y, %sx, %sq = stg.repeat L carry(%x = %x0 : !act) {
        %w = stg.param "model.layers.w" : !w
        %h = stg.einsum "bsh,hk->bsk" %x, %w : !act, !w -> !act
        %q = stg.reshape %h : !act -> !heads
        %o = stg.attention %q, %q, %q heads N kv_heads N causal : !heads, !heads, !heads -> !heads
        %o2 = stg.reshape %o : !heads -> !act
        %y1 = stg.elementwise add %x, %o2 : !act, !act -> !act
        stg.yield %y1, %x, %q : !act, !act, !heads
      }
      %head = stg.param "lm_head.weight" : !table
      %l = stg.einsum "bsh,vh->bsv" %y, %head : !act, !table -> !logits
      %c = stg.cross_entropy %l, %t : !logits, !ids -> !scalar
      stg.yield %c, %i, %t, %y, %l, %sx, %sq : !scalar, !ids, !ids, !act, !logits, !xs, !qs
    }
    stg.phase backward {
      %one = stg.fill 1.0 : !scalar
      %dl = stg.vjp(%logits, %labels) wrt [0] cotangents(%one : !scalar) {
      ^bb0(%a : !logits, %b : !ids):
        %c = stg.cross_entropy %a, %b : !logits, !ids -> !scalar
        stg.yield %c : !scalar
      } : (!logits, !ids) -> (!logits)
      %dl16 = stg.elementwise cast %dl : !logits -> !logits16
      %dhead = stg.einsum "bsv,bsh->vh" %dl16, %xl : !logits16, !act -> !table32
      %gh = stg.optimizer_state "grad" of "lm_head.weight" : !table32
      %gh2 = stg.elementwise add %gh, %dhead : !table32, !table32 -> !table32
      stg.assign %gh2 to "grad" of "lm_head.weight" : !table32
      %head = stg.param "lm_head.weight" : !table
      %dx = stg.einsum "bsv,vh->bsh" %dl16, %head : !logits16, !table -> !act
      %dx0 = stg.repeat L carry(%g = %dx : !act) scan(%x = %xs : !xs, %q = %qs : !qs) reverse {
        %w = stg.param "model.layers.w" : !w
        %do = stg.reshape %g : !act -> !heads
        %dq, %dk, %dv = stg.vjp(%q, %q, %q) wrt [0, 1, 2] cotangents(%do : !heads) {
        ^bb0(%a : !heads, %b : !heads, %c : !heads):
          %o = stg.attention %a, %b, %c heads N kv_heads N causal : !heads, !heads, !heads -> !heads
          stg.yield %o : !heads
        } : (!heads, !heads, !heads) -> (!heads, !heads, !heads)
        %s1 = stg.elementwise add %dq, %dk : !heads, !heads -> !heads
        %dqkv = stg.elementwise add %s1, %dv : !heads, !heads -> !heads
        %dh = stg.reshape %dqkv : !heads -> !act
        %dw = stg.einsum "bsh,bsk->hk" %x, %dh : !act, !act -> !w32
        %gw = stg.optimizer_state "grad" of "model.layers.w" : !w32
        %gw2 = stg.elementwise add %gw, %dw : !w32, !w32 -> !w32
        stg.assign %gw2 to "grad" of "model.layers.w" : !w32
        %dxa = stg.einsum "bsk,hk->bsh" %dh, %w : !act, !w -> !act
        %dxn = stg.elementwise add %g, %dxa : !act, !act -> !act
        stg.yield %dxn : !act
      }
      %emb = stg.param "model.embed_tokens.weight" : !table
      %demb = stg.vjp(%emb, %ids) wrt [0] cotangents(%dx0 : !act) {
      ^bb0(%a : !table, %b : !ids):
        %e = stg.embedding %a, %b : !table, !ids -> !act
        stg.yield %e : !act
      } : (!table, !ids) -> (!table)
      %demb32 = stg.elementwise cast %demb : !table -> !table32
      %ge = stg.optimizer_state "grad" of "model.embed_tokens.weight" : !table32
      %ge2 = stg.elementwise add %ge, %demb32 : !table32, !table32 -> !table32
      stg.assign %ge2 to "grad" of "model.embed_tokens.weight" : !table32
      stg.yield
    }
    stg.phase optimizer {
      %hm = stg.optimizer_state "master" of "lm_head.weight" : !table32
      %hg = stg.optimizer_state "grad" of "lm_head.weight" : !table32
      %ha = stg.optimizer_state "exp_avg" of "lm_head.weight" : !table32
      %hv = stg.optimizer_state "exp_avg_sq" of "lm_head.weight" : !table32
      %ht = stg.optimizer_state "step" of "lm_head.weight" : !scalar
      %hm2, %ha2, %hv2, %ht2 = stg.adam %hm, %hg, %ha, %hv, %ht lr 1.0e-03 betas 0.9, 0.95 eps 1.0e-08 weight_decay 0.1 decoupled : !table32, !table32, !table32, !table32, !scalar -> !table32, !table32, !table32, !scalar
      stg.assign %hm2 to "master" of "lm_head.weight" : !table32
      stg.assign %ha2 to "exp_avg" of "lm_head.weight" : !table32
      stg.assign %hv2 to "exp_avg_sq" of "lm_head.weight" : !table32
      stg.assign %ht2 to "step" of "lm_head.weight" : !scalar
      %h16 = stg.elementwise cast %hm2 : !table32 -> !table
      stg.assign %h16 to "lm_head.weight" : !table
      %hz = stg.fill 0.0 : !table32
      stg.assign %hz to "grad" of "lm_head.weight" : !table32
      stg.repeat L {
        %wm = stg.optimizer_state "master" of "model.layers.w" : !w32
        %wg = stg.optimizer_state "grad" of "model.layers.w" : !w32
        %wa = stg.optimizer_state "exp_avg" of "model.layers.w" : !w32
        %wv = stg.optimizer_state "exp_avg_sq" of "model.layers.w" : !w32
        %wt = stg.optimizer_state "step" of "model.layers.w" : !scalar
        %wm2, %wa2, %wv2, %wt2 = stg.adam %wm, %wg, %wa, %wv, %wt lr 1.0e-03 betas 0.9, 0.95 eps 1.0e-08 weight_decay 0.1 decoupled : !w32, !w32, !w32, !w32, !scalar -> !w32, !w32, !w32, !scalar
        stg.assign %wm2 to "master" of "model.layers.w" : !w32
        stg.assign %wa2 to "exp_avg" of "model.layers.w" : !w32
        stg.assign %wv2 to "exp_avg_sq" of "model.layers.w" : !w32
        stg.assign %wt2 to "step" of "model.layers.w" : !scalar
        %w16 = stg.elementwise cast %wm2 : !w32 -> !w
        stg.assign %w16 to "model.layers.w" : !w
        %wz = stg.fill 0.0 : !w32
        stg.assign %wz to "grad" of "model.layers.w" : !w32
        stg.yield
      }
      %em = stg.optimizer_state "master" of "model.embed_tokens.weight" : !table32
      %eg = stg.optimizer_state "grad" of "model.embed_tokens.weight" : !table32
      %ea = stg.optimizer_state "exp_avg" of "model.embed_tokens.weight" : !table32
      %ev = stg.optimizer_state "exp_avg_sq" of "model.embed_tokens.weight" : !table32
      %et = stg.optimizer_state "step" of "model.embed_tokens.weight" : !scalar
      %em2, %ea2, %ev2, %et2 = stg.adam %em, %eg, %ea, %ev, %et lr 1.0e-03 betas 0.9, 0.95 eps 1.0e-08 weight_decay 0.1 decoupled : !table32, !table32, !table32, !table32, !scalar -> !table32, !table32, !table32, !scalar
      stg.assign %em2 to "master" of "model.embed_tokens.weight" : !table32
      stg.assign %ea2 to "exp_avg" of "model.embed_tokens.weight" : !table32
      stg.assign %ev2 to "exp_avg_sq" of "model.embed_tokens.weight" : !table32
      stg.assign %et2 to "step" of "model.embed_tokens.weight" : !scalar
      %e16 = stg.elementwise cast %em2 : !table32 -> !table
      stg.assign %e16 to "model.embed_tokens.weight" : !table
      %ez = stg.fill 0.0 : !table32
      stg.assign %ez to "grad" of "model.embed_tokens.weight" : !table32
      stg.yield
    }
    func.return %loss : !scalar
  }
}
