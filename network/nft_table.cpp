#include "network/nft_table.hpp"

#include <nftables/libnftables.h>

#include <stdexcept>

namespace sandboxd::network {

nft_table::nft_table() : ctx_(::nft_ctx_new(NFT_CTX_DEFAULT)) {
  if (!ctx_)
    throw std::runtime_error("libnftables: cannot make a context");
  ::nft_ctx_buffer_error(ctx_);
  ::nft_ctx_buffer_output(ctx_);
}

nft_table::~nft_table() {
  ::nft_ctx_free(ctx_);
}

result<void> nft_table::run(const std::string& script) {
  if (::nft_run_cmd_from_buffer(ctx_, script.c_str()) == 0)
    return {};
  const char* why = ::nft_ctx_get_error_buffer(ctx_);
  return make_error(errc::unavailable,
                    "nftables refused sandboxd's egress rules: " + std::string(why ? why : "") +
                      " (sandboxd needs root and a kernel with nftables: docs/network.md)");
}

} // namespace sandboxd::network
