#pragma once
// Elapsed wall time on the steady clock, in the units saker's figures use (milliseconds for steps and requests,
// seconds for rates): one definition for every timer of the engine, the server and the benches.
#include <chrono>

namespace saker {

using SteadyClock = std::chrono::steady_clock;

inline double ms_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
inline double ms_since(SteadyClock::time_point t0) { return ms_between(t0, SteadyClock::now()); }
inline double seconds_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace saker
