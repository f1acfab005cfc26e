// Replays an oracle trace (oracle_replay.py) through MinAtarEnv with the oracle's own draws
// (RecordedDraws) and checks, after every reset and act, the draws consumed (kind, bounds, count), the
// reward, the terminal flag, the wrapper's last action (kept across resets: CarryOver) and every
// observation bit. Prints the first mismatch with its context and exits 1.
// usage: minatar_replay TRACE | minatar_replay --list
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "plugins/minatar/common.h"
#include "plugins/minatar/tests/games.h"

namespace cugym::minatar {
namespace {

struct Event {
  char kind;  // 'R' reset, 'A' act
  int line;
  int action = 0, reward = 0, terminal = 0, last_action = 0;
  std::vector<RecordedDraw> draws;
  std::string obs_hex;
};

bool ParseEvent(const std::string& text, int line, Event* e) {
  std::istringstream in(text);
  std::string kind;
  int n = 0;
  in >> kind;
  if (kind == "R") {
    in >> e->last_action >> n;
  } else if (kind == "A") {
    in >> e->action >> e->reward >> e->terminal >> e->last_action >> n;
  } else {
    return false;
  }
  e->kind = kind[0];
  e->line = line;
  for (int k = 0; k < n; ++k) {
    std::string tag;
    RecordedDraw d{kUniformDraw, 0, 0, 0.0};
    in >> tag;
    if (tag == "u") {
      in >> d.value;
    } else if (tag == "i") {
      long v = 0;
      in >> d.lo >> d.hi >> v;
      d.kind = kIntDraw;
      d.value = static_cast<double>(v);
    } else {
      return false;
    }
    e->draws.push_back(d);
  }
  in >> e->obs_hex;
  return static_cast<bool>(in);
}

bool ObsBit(const std::string& hex, int k) {
  const char c = hex[k / 4];
  const int nibble = c <= '9' ? c - '0' : c - 'a' + 10;
  return ((nibble >> (3 - k % 4)) & 1) != 0;
}

const char* kActionNames[] = {"n", "l", "u", "r", "d", "f"};

template <class Game, bool kMinimal>
int Replay(const std::vector<Event>& events, float sticky, bool ramping, const std::string& path) {
  using Env = MinAtarEnv<Game, kMinimal>;
  typename Env::Params params;
  params.sticky_action_prob = sticky;
  params.difficulty_ramping = ramping;
  typename Env::State state{};
  bool started = false;
  int episode = 0, act = 0;
  float obs[Env::kObsDim];
  for (const Event& e : events) {
    RecordedDraws draws;
    draws.draws = e.draws.data();
    draws.count = static_cast<int64_t>(e.draws.size());
    StepResult result{0.0f, false};
    if (e.kind == 'R') {
      typename Env::State fresh = Env::ResetWith(params, draws);
      if (started) Env::CarryOver(state, fresh);
      state = fresh;
      started = true;
      ++episode;
      act = 0;
    } else {
      result = Env::StepWith(params, state, e.action, draws);
      ++act;
    }
    std::ostringstream why;
    if (draws.failed())
      why << "draw " << draws.failure_index << " of " << draws.count << ": the port asked for "
          << (draws.failure_kind == kUniformDraw
                  ? std::string("rand()")
                  : "randint(" + std::to_string(draws.failure_lo) + ", " + std::to_string(draws.failure_hi) + ")")
          << ", the oracle drew "
          << (draws.failure_index < draws.count
                  ? (e.draws[draws.failure_index].kind == kUniformDraw
                         ? std::string("rand()")
                         : "randint(" + std::to_string(e.draws[draws.failure_index].lo) + ", " +
                               std::to_string(e.draws[draws.failure_index].hi) + ")")
                  : std::string("nothing more"));
    else if (draws.next != draws.count)
      why << "the port used " << draws.next << " draws, the oracle " << draws.count;
    else if (e.kind == 'A' && (result.reward != static_cast<float>(e.reward) || result.terminated != (e.terminal != 0)))
      why << "reward/terminal: port " << result.reward << "/" << result.terminated << ", oracle " << e.reward << "/"
          << e.terminal;
    else if (state.last_action != e.last_action)
      why << "last action: port " << state.last_action << ", oracle " << e.last_action;
    Env::Observe(params, state, obs);
    int wrong_cells = 0;
    std::ostringstream cells;
    for (int k = 0; k < Env::kObsDim; ++k) {
      const bool expected = ObsBit(e.obs_hex, k);
      if ((obs[k] != 0.0f) == expected) continue;
      if (++wrong_cells <= 8) {
        const int c = k % Game::kChannels, x = (k / Game::kChannels) % kGrid, y = k / Game::kChannels / kGrid;
        cells << " (y " << y << ", x " << x << ", ch " << c << ": oracle " << expected << ")";
      }
    }
    if (why.str().empty() && wrong_cells > 0) why << wrong_cells << " observation bits differ:" << cells.str();
    if (!why.str().empty()) {
      std::cerr << path << ":" << e.line << ": episode " << episode << ", "
                << (e.kind == 'R' ? std::string("reset") : "act " + std::to_string(act)) << ": " << why.str() << "\n";
      if (e.kind == 'A')
        std::cerr << "  action " << e.action << " (" << (kMinimal ? "minimal set" : "full set") << "), executed "
                  << kActionNames[e.last_action % 6] << "\n";
      auto board = [&](auto bit) {
        for (int y = 0; y < kGrid; ++y) {
          std::cerr << "   ";
          for (int x = 0; x < kGrid; ++x) {
            int top = -1;
            for (int c = 0; c < Game::kChannels; ++c)
              if (bit(((y * kGrid + x) * Game::kChannels) + c)) top = c;
            std::cerr << (top < 0 ? '.' : static_cast<char>('0' + top));
          }
          std::cerr << "\n";
        }
      };
      std::cerr << "  oracle board (highest channel per cell):\n";
      board([&](int k) { return ObsBit(e.obs_hex, k); });
      std::cerr << "  port board:\n";
      board([&](int k) { return obs[k] != 0.0f; });
      return 1;
    }
  }
  std::cout << events.size() << " events, " << episode << " episodes agree\n";
  return 0;
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: minatar_replay TRACE | minatar_replay --list\n";
    return 2;
  }
  const std::string arg = argv[1];
  if (arg == "--list") {
#define CUGYM_LIST_GAME(Type, name) std::cout << name << "\n";
    CUGYM_MINATAR_GAMES(CUGYM_LIST_GAME)
#undef CUGYM_LIST_GAME
    return 0;
  }
  std::ifstream file(arg);
  std::string header;
  if (!file || !std::getline(file, header)) {
    std::cerr << "minatar_replay: cannot read " << arg << "\n";
    return 2;
  }
  std::istringstream h(header);
  std::string word, game;
  int minimal = 1, ramping = 1;
  float sticky = 0.1f;
  h >> word >> game >> word >> minimal >> word >> sticky >> word >> ramping;
  if (!h) {
    std::cerr << arg << ": bad header '" << header << "'\n";
    return 2;
  }
  std::vector<Event> events;
  std::string text;
  for (int line = 2; std::getline(file, text); ++line) {
    Event e;
    if (!ParseEvent(text, line, &e)) {
      std::cerr << arg << ":" << line << ": cannot parse the event\n";
      return 2;
    }
    events.push_back(std::move(e));
  }
#define CUGYM_REPLAY_GAME(Type, name)                                      \
  if (game == name)                                                        \
    return minimal ? Replay<Type, true>(events, sticky, ramping != 0, arg) \
                   : Replay<Type, false>(events, sticky, ramping != 0, arg);
  CUGYM_MINATAR_GAMES(CUGYM_REPLAY_GAME)
#undef CUGYM_REPLAY_GAME
  std::cerr << arg << ": unknown game '" << game << "'\n";
  return 2;
}

}  // namespace
}  // namespace cugym::minatar

int main(int argc, char** argv) { return cugym::minatar::Main(argc, argv); }
