#pragma once
// Attention metadata for one forward over many sequences: the batch's tokens are flattened ([n_tokens],
// sequences back to back or interleaved), each token names its sequence, its KV cache slot and its
// position, and each sequence names its KV blocks (a block table into a paged cache) and its mask shape.
// Every attention backend (ref, cpu, cuda) reads the same struct; validate() is the one place that decides
// what a well-formed batch is.
//
// Slots and positions. A sequence's KV lives in logical slots 0, 1, 2, ...; slot s is row s % block_size of
// physical block block_table[s / block_size] of the cache [n_blocks, block_size, n_head_kv, head_dim]. In a
// chain (causal or full mask) the token at slot s has position s. A speculative tree is a sequence whose
// new tokens carry parent indices instead of forming a chain: its committed prefix is slots
// [0, tree_start), its nodes occupy distinct slots >= tree_start (in any order, e.g. the order the tree
// builder emitted them), and a node's position is tree_start + its depth (the root, depth 0, is the
// pending token at position tree_start). After verification the accepted nodes are moved to consecutive
// slots, where position == slot again.
//
// Visibility of key slot s to a query token (slot q, position p):
//   kCausal  s <= q
//   kFull    every s < n_ctx (bidirectional: a DFlash draft block sees all context and its whole block)
//   kTree    s < tree_start, or s is the slot of the query itself or of one of its ancestors
// and, when a layer has a sliding window W, additionally key_position > p - W (key_position = s outside
// a tree, the node's position inside one).
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace saker {

enum class AttentionMask : uint8_t {
  kCausal,
  kTree,
  kFull,
};

struct AttentionSequence {
  std::span<const int32_t> block_table;  // [>= ceil(n_ctx / block_size)] physical block of each logical block
  int32_t n_ctx = 0;  // slots [0, n_ctx) hold K/V, including this step's new rows (written before attention)
  AttentionMask mask = AttentionMask::kCausal;
  int32_t tree_start = 0;  // kTree only: the first slot of the tree (= the committed prefix length)
  // Rows being verified (a draft tree, or a draft chain sent as kCausal): each must round as a one-row decode
  // of its token does, so backends keep them off paths whose rounding depends on the batch (BLAS on the CPU).
  // kTree implies it.
  bool verify = false;
  bool verifies() const { return verify || mask == AttentionMask::kTree; }
};

struct AttentionBatch {
  std::span<const AttentionSequence> sequences;  // [n_seqs]
  std::span<const int32_t> token_seq;     // [n_tokens] index into sequences
  std::span<const int32_t> token_slot;    // [n_tokens] slot of the token's own K/V row
  std::span<const int32_t> token_pos;     // [n_tokens] position (RoPE, sliding window)
  std::span<const int32_t> token_parent;  // [n_tokens] kTree tokens: batch index of the parent (earlier in the
                                          // batch, same sequence), -1 for the root; empty when no tree

  int64_t n_tokens() const { return static_cast<int64_t>(token_seq.size()); }

  // Checks every index against the cache geometry and the rules above (lengths agree, slots in range and
  // distinct per sequence, block ids in [0, n_blocks), chain positions == slots, tree parents valid).
  Status validate(int64_t n_blocks, int64_t block_size) const;

  // The key slots the query at batch index `token` sees, ascending (mask and sliding window applied; a
  // window of 0 means none). Backends that enumerate keys on the host share this definition.
  void visible_slots(int64_t token, int32_t sliding_window, std::vector<int32_t>* slots) const;

  // The position of the key at slot s of the sequence of the query at batch index `token`, for a slot that
  // query can see: s itself outside a tree; inside a tree, the position of the node found on the query's
  // ancestor chain.
  int32_t key_position(int64_t token, int32_t s) const;
};

}  // namespace saker
