// `advise --units REGEX` on hostile patterns and long names: the match ends,
// in linear time, without recursion (std::regex overflowed its stack on
// `(.)*` over a 16 KiB name and backtracked for ever on `(b+)+c`).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "advice_error.h"
#include "units/unit_selection.h"

namespace gcprof::advisor {
namespace {

ModuleStats module(const std::string& name, Ns first) {
  ModuleStats m;
  m.name = name;
  m.depth = 1;
  m.saved_bytes = 1 << 20;
  m.first_forward = first;
  m.backward_calls = 1;
  return m;
}

// A selection that has not ended after two minutes never will: the test
// says so and ends the process (the matching thread cannot be stopped).
UnitSelection selectOrGiveUp(const std::vector<ModuleStats>& modules, const std::string& spec) {
  auto job = std::async(std::launch::async, [&] { return selectUnits(modules, spec); });
  if (job.wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
    ADD_FAILURE() << "--units '" << spec << "' still matching after two minutes (backtracking)";
    std::_Exit(1);
  }
  return job.get();
}

TEST(UnitsRegex, AStarOfAGroupOverSixteenKiBNamesMatchesThem) {
  std::vector<ModuleStats> modules;
  for (int i = 0; i < 4; ++i) modules.push_back(module(std::string(16 << 10, 'a' + i), i));
  UnitSelection s = selectOrGiveUp(modules, "(.)*");
  EXPECT_EQ(s.names.size(), 4u);
  EXPECT_EQ(s.rule, "regex: (.)*");
}

TEST(UnitsRegex, NestedQuantifiersOnALongNameEndAndMatchNothing) {
  std::vector<ModuleStats> modules = {module(std::string(4096, 'b'), 0), module("layers.0", 1)};
  EXPECT_THROW(selectOrGiveUp(modules, "(b+)+c"), AdviceError);
  modules.push_back(module(std::string(4096, 'b') + "c", 2));
  EXPECT_EQ(selectOrGiveUp(modules, "(b+)+c").names.size(), 1u);
}

TEST(UnitsRegex, TheDocumentedSyntaxStillWorks) {
  std::vector<ModuleStats> modules;
  for (int i = 0; i < 12; ++i) modules.push_back(module("encoder.layer." + std::to_string(i), i));
  EXPECT_EQ(selectUnits(modules, R"(encoder\.layer\.\d+)").names.size(), 12u);
  EXPECT_EQ(selectUnits(modules, R"(encoder\.layer\.[0-9])").names.size(), 10u);
  EXPECT_EQ(selectUnits(modules, R"(.*\.(1|11))").names,
            (std::vector<std::string>{"encoder.layer.1", "encoder.layer.11"}));
  // The whole name, as before: a part of it is not a match.
  EXPECT_THROW(selectUnits(modules, "layer"), AdviceError);
  EXPECT_EQ(selectUnits(modules, R"(encoder\.layer\.\d{2})").names.size(), 2u);
}

TEST(UnitsRegex, NamesAreMatchedByteByByte) {
  // Not UTF-8 (a latin-1 é) and UTF-8 (é as two bytes): both still match.
  std::vector<ModuleStats> modules = {module("caf\xe9.0", 0), module("caf\xc3\xa9.1", 1)};
  EXPECT_EQ(selectUnits(modules, R"(caf.\.0|caf..\.1)").names.size(), 2u);
}

TEST(UnitsRegex, WhatRe2DoesNotSupportIsRefusedInWords) {
  std::vector<ModuleStats> modules = {module("aa", 0)};
  for (const char* spec : {R"((a)\1)", "a(?=a)"}) {
    try {
      selectUnits(modules, spec);
      FAIL() << spec << ": no error";
    } catch (const AdviceError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("not a valid regular expression"), std::string::npos) << what;
      EXPECT_NE(what.find("no backreferences or lookaround"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace gcprof::advisor
