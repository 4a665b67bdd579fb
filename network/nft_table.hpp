// nft_table — loads nftables scripts (egress_rules.hpp) into the kernel through libnftables,
// the library behind the `nft` command, in the calling thread's network namespace.
#pragma once

#include "base/result.hpp"

#include <string>

struct nft_ctx;

namespace sandboxd::network {

class nft_table {
public:
  nft_table();
  ~nft_table();
  nft_table(const nft_table&) = delete;
  nft_table& operator=(const nft_table&) = delete;

  // Runs `script` as one transaction (all of it or none); unavailable with nft's own words
  // when the kernel refuses it (no nftables, not root).
  result<void> run(const std::string& script);

private:
  ::nft_ctx* ctx_;
};

} // namespace sandboxd::network
