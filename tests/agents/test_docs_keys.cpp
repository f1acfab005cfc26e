// The docs against the code's own lists, so that neither drifts from the other: the sweepable keys
// in docs/sweeps.md against agent::SweepableKeys(), and the config keys in the key tables of
// docs/dqn.md, docs/pqn.md and docs/ppo.md against TrainConfig's keys (the lines TrainConfig::ToToml writes).
// The CLI flags are checked against `cugym CMD --help` by tests/cli/test_docs_flags.sh.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "agents/common/train_config.h"
#include "agents/run/sweep_spec.h"

namespace cugym {
namespace {

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(CUGYM_SOURCE_DIR) + "/docs/" + name);
  EXPECT_TRUE(in) << "cannot read docs/" << name;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every `identifier` in backticks within text.
std::set<std::string> BacktickedNames(const std::string& text) {
  std::set<std::string> names;
  static const std::regex name("`([a-z_][a-z0-9_]*\\*?)`");
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) names.insert((*it)[1]);
  return names;
}

// The names in the first column of every table row under a "| key | default | meaning |" header:
// bare or in backticks, several per cell separated by commas; `eval_*` stands for a prefix.
std::set<std::string> KeyTableNames(const std::string& doc) {
  std::set<std::string> names;
  std::istringstream lines(doc);
  std::string line;
  bool in_table = false;
  static const std::regex header("^\\| *key *\\| *default *\\|");
  static const std::regex rule("^\\| *-+ *\\|");
  static const std::regex name("[a-z_][a-z0-9_]*\\*?");
  while (std::getline(lines, line)) {
    if (std::regex_search(line, header)) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.empty() || line[0] != '|') {
      in_table = false;
      continue;
    }
    if (std::regex_search(line, rule)) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), name), end; it != end; ++it) names.insert(it->str());
  }
  return names;
}

bool Covers(const std::set<std::string>& documented, const std::string& key) {
  if (documented.count(key)) return true;
  for (const std::string& d : documented)
    if (!d.empty() && d.back() == '*' && key.rfind(d.substr(0, d.size() - 1), 0) == 0) return true;
  return false;
}

TEST(DocsKeys, SweepableKeysMatchSweepsPage) {
  const std::string doc = ReadDoc("sweeps.md");
  const std::size_t begin = doc.find("<!-- sweepable-keys -->");
  const std::size_t end = doc.find("<!-- /sweepable-keys -->");
  ASSERT_NE(begin, std::string::npos) << "docs/sweeps.md lost its <!-- sweepable-keys --> marker";
  ASSERT_NE(end, std::string::npos) << "docs/sweeps.md lost its <!-- /sweepable-keys --> marker";
  const std::set<std::string> documented = BacktickedNames(doc.substr(begin, end - begin));
  const std::set<std::string>& code = agent::SweepableKeys();
  for (const std::string& key : code)
    EXPECT_TRUE(documented.count(key)) << key << " is sweepable but not in docs/sweeps.md";
  for (const std::string& key : documented)
    EXPECT_TRUE(code.count(key) > 0) << key << " is in docs/sweeps.md's sweepable keys but the code refuses it";
}

TEST(DocsKeys, ConfigKeysMatchTheAgentsPages) {
  std::set<std::string> code;
  std::istringstream toml(agent::TrainConfig().ToToml());
  std::string line;
  while (std::getline(toml, line))
    if (line.find(" = ") != std::string::npos) code.insert(line.substr(0, line.find(" = ")));
  ASSERT_GT(code.size(), 30u);

  const std::set<std::string> dqn = KeyTableNames(ReadDoc("dqn.md"));
  const std::set<std::string> pqn = KeyTableNames(ReadDoc("pqn.md"));
  const std::set<std::string> ppo = KeyTableNames(ReadDoc("ppo.md"));
  const std::set<std::string> sac = KeyTableNames(ReadDoc("sac.md"));
  ASSERT_FALSE(dqn.empty()) << "no | key | default | meaning | table in docs/dqn.md";
  ASSERT_FALSE(pqn.empty()) << "no | key | default | meaning | table in docs/pqn.md";
  ASSERT_FALSE(ppo.empty()) << "no | key | default | meaning | table in docs/ppo.md";
  ASSERT_FALSE(sac.empty()) << "no | key | default | meaning | table in docs/sac.md";
  for (const std::string& key : code)
    EXPECT_TRUE(Covers(dqn, key) || Covers(pqn, key) || Covers(ppo, key) || Covers(sac, key))
        << key << " is a config key but none of docs/dqn.md, pqn.md, ppo.md and sac.md's key tables has it";
  for (const std::set<std::string>* page : {&dqn, &pqn, &ppo, &sac})
    for (const std::string& key : *page) {
      bool known = code.count(key) > 0;
      if (!key.empty() && key.back() == '*')
        for (const std::string& c : code) known = known || c.rfind(key.substr(0, key.size() - 1), 0) == 0;
      EXPECT_TRUE(known) << key << " is in a docs key table but is no config key";
    }
}

}  // namespace
}  // namespace cugym
