// result.hpp — `result<T>`: what a call whose "no" is normal returns — either a T or an
// `error` (base/errc.hpp). `result<void>` carries only the error, if any. The one shape
// every layer returns for domain outcomes; faults are exceptions.
#pragma once

#include "base/errc.hpp"

#include <optional>
#include <utility>
#include <variant>

namespace sandboxd {

template <class T>
class result {
public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  result(error e) : v_(std::in_place_index<1>, std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  const error& err() const { return std::get<1>(v_); }
  errc code() const { return std::get<1>(v_).code; }

private:
  std::variant<T, error> v_;
};

template <>
class result<void> {
public:
  result() = default;
  result(error e) : e_(std::move(e)) {}

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const error& err() const { return *e_; }
  errc code() const { return e_->code; }

private:
  std::optional<error> e_;
};

} // namespace sandboxd
