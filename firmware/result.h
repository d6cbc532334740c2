// A value or an error message, for firmware functions that must not throw: the controller
// firmware reports bad input (a host's permutation, a calibration table) back to its caller.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace mxtb::firmware {

template <class T>
class Result {
 public:
  static Result success(T value) {
    Result r;
    r.value_ = std::move(value);
    return r;
  }
  static Result failure(std::string error) {
    Result r;
    r.error_ = std::move(error);
    return r;
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Only on success.
  const T& value() const {
    assert(ok());
    return *value_;
  }
  T& value() {
    assert(ok());
    return *value_;
  }
  // Only on failure: a sentence naming what was wrong.
  const std::string& error() const { return error_; }

 private:
  Result() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace mxtb::firmware
