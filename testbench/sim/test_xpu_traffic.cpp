#include "sim/link/xpu_traffic.h"

#include <doctest/doctest.h>

#include <vector>

using namespace mxtb::sim;

namespace {
struct Word {
  uint64_t data;
  bool last;
};
std::vector<Word> generate(TrafficSource& src, int n) {
  std::vector<Word> out;
  while (static_cast<int>(out.size()) < n) {
    auto d = src.drive();
    if (!d.valid) continue;
    out.push_back({d.data, d.last});
    src.fire();
  }
  return out;
}
}  // namespace

TEST_CASE("scoreboard accepts the source's stream exactly as sent") {
  TrafficConfig cfg;
  TrafficSource src(9, cfg, 1);
  Scoreboard sb(9, cfg, 2);
  auto words = generate(src, 500);
  for (size_t i = 0; i < words.size(); ++i) sb.deliver(words[i].data, words[i].last, i);
  CHECK(sb.errors() == 0);
  CHECK(sb.words() == 500);
}

TEST_CASE("scoreboard catches corruption, loss, duplication and a wrong end of message") {
  TrafficConfig cfg;
  cfg.min_words = 3;
  cfg.max_words = 3;
  auto run = [&](auto mutate) {
    TrafficSource src(5, cfg, 1);
    Scoreboard sb(5, cfg, 2);
    auto words = generate(src, 30);
    mutate(words);
    for (size_t i = 0; i < words.size(); ++i) sb.deliver(words[i].data, words[i].last, i);
    return sb.errors();
  };
  CHECK(run([](std::vector<Word>&) {}) == 0);
  CHECK(run([](std::vector<Word>& w) { w[7].data ^= 1; }) > 0);
  CHECK(run([](std::vector<Word>& w) { w.erase(w.begin() + 3, w.begin() + 6); }) == 1);   // a lost message: one gap
  CHECK(run([](std::vector<Word>& w) { w.insert(w.begin() + 6, w.begin() + 3, w.begin() + 6); }) > 0);  // duplicate
  CHECK(run([](std::vector<Word>& w) { w[4].last = true; }) > 0);
  CHECK(run([](std::vector<Word>& w) { std::swap(w[3], w[6]); std::swap(w[4], w[7]); std::swap(w[5], w[8]); }) > 0);
}

TEST_CASE("a stopped source finishes its message and offers no more") {
  TrafficConfig cfg;
  cfg.min_words = 4;
  cfg.max_words = 4;
  TrafficSource src(1, cfg, 1);
  auto d = src.drive();
  REQUIRE(d.valid);
  src.fire();
  src.stop();
  int more = 0;
  for (int i = 0; i < 10; ++i) {
    auto x = src.drive();
    if (!x.valid) break;
    src.fire();
    ++more;
  }
  CHECK(more == 3);
  CHECK(src.messages_sent() == 1);
}

TEST_CASE("a resynchronized scoreboard picks up another stream mid-flight and checks it strictly") {
  TrafficConfig cfg;
  cfg.min_words = 3;
  cfg.max_words = 5;
  TrafficSource old_src(1, cfg, 1), new_src(2, cfg, 2);
  auto old_words = generate(old_src, 20);
  auto new_words = generate(new_src, 200);
  Scoreboard sb(1, cfg, 3);
  for (size_t i = 0; i < 7; ++i) sb.deliver(old_words[i].data, old_words[i].last, i);
  sb.resync(2);
  // The new stream is joined in the middle of a message.
  size_t start = 11;
  while (new_words[start - 1].last) ++start;
  for (size_t i = start; i < new_words.size(); ++i) sb.deliver(new_words[i].data, new_words[i].last, i);
  CHECK(sb.errors() == 0);
  CHECK(sb.skipped_words() > 0);
  CHECK(sb.messages() > 20);

  // After resynchronizing, a corrupted word is still caught.
  Scoreboard sb2(2, cfg, 3);
  sb2.resync(2);
  for (size_t i = start; i < new_words.size(); ++i)
    sb2.deliver(new_words[i].data ^ (i == start + 30 ? 1u : 0u), new_words[i].last, i);
  CHECK(sb2.errors() == 1);
}

TEST_CASE("a gap in the stream is one error, its messages and words counted lost; checking goes on strictly after it") {
  TrafficConfig cfg;
  cfg.min_words = 2;
  cfg.max_words = 6;
  TrafficSource src(11, cfg, 1);
  auto words = generate(src, 400);
  // Message boundaries: first word index of each message.
  std::vector<size_t> starts{0};
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i].last) starts.push_back(i + 1);
  REQUIRE(starts.size() > 40);
  auto deliver = [&](Scoreboard& sb, const std::vector<Word>& w) {
    for (size_t i = 0; i < w.size(); ++i) sb.deliver(w[i].data, w[i].last, i);
  };
  const uint64_t complete = starts.size() - (words.back().last ? 0 : 1);

  SUBCASE("messages 10 to 14 lost") {
    auto w = words;
    const uint64_t lost_words = starts[15] - starts[10];
    w.erase(w.begin() + static_cast<long>(starts[10]), w.begin() + static_cast<long>(starts[15]));
    Scoreboard sb(11, cfg, 2);
    deliver(sb, w);
    CHECK(sb.errors() == 1);
    CHECK(sb.messages_lost() == 5);
    CHECK(sb.words_lost() == lost_words);
    CHECK(sb.messages() == complete - 5);
    CHECK(sb.first_error().find("5 messages lost") != std::string::npos);
  }
  SUBCASE("message 20 cut short after its first word, 21 lost") {
    auto w = words;
    w.erase(w.begin() + static_cast<long>(starts[20] + 1), w.begin() + static_cast<long>(starts[22]));
    Scoreboard sb(11, cfg, 2);
    deliver(sb, w);
    CHECK(sb.errors() == 1);
    CHECK(sb.messages_lost() == 2);
    CHECK(sb.words_lost() == starts[22] - starts[20] - 1);
    CHECK(sb.messages() == complete - 2);
  }
  SUBCASE("message 30 delivered again after 31") {
    auto w = words;
    std::vector<Word> again(w.begin() + static_cast<long>(starts[30]), w.begin() + static_cast<long>(starts[31]));
    w.insert(w.begin() + static_cast<long>(starts[32]), again.begin(), again.end());
    Scoreboard sb(11, cfg, 2);
    deliver(sb, w);
    CHECK(sb.errors() == 1);
    CHECK(sb.messages_lost() == 0);
    CHECK(sb.skipped_words() == again.size() - 1);
    CHECK(sb.messages() == complete);
  }
  SUBCASE("a corrupted word after a gap is still caught") {
    auto w = words;
    w.erase(w.begin() + static_cast<long>(starts[10]), w.begin() + static_cast<long>(starts[12]));
    w[starts[20] + 1 - (starts[12] - starts[10])].data ^= 4;  // message 20's second word
    Scoreboard sb(11, cfg, 2);
    deliver(sb, w);
    CHECK(sb.errors() == 2);
    CHECK(sb.messages_lost() == 2);
  }
}
