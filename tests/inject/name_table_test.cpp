// Interned names: equal names share one copy, distinct names stay distinct
// however long they are.
#include <gtest/gtest.h>

#include <string>

#include "name_table.h"

using gcprof::inject::internName;

TEST(NameTable, EqualNamesShareOneCopy) {
  std::string a = "encoder.layers.3.mlp";
  EXPECT_EQ(internName(a.c_str()), internName(std::string(a).c_str()));
  EXPECT_STREQ(internName(a.c_str()), "encoder.layers.3.mlp");
}

TEST(NameTable, LongNamesAreKeptWhole) {
  std::string name(5000, 'm');  // was cut at 1024 bytes once
  EXPECT_EQ(std::string(internName(name.c_str())), name);
}

TEST(NameTable, NamesOverTheCapStayDistinct) {
  std::string prefix(20000, 'x');
  const char* a = internName((prefix + ".layers.0").c_str());
  const char* b = internName((prefix + ".layers.1").c_str());
  EXPECT_NE(a, b);
  EXPECT_NE(std::string(a), std::string(b));
  EXPECT_EQ(std::string(a).size(), 16384u);
  EXPECT_EQ(std::string(a).substr(0, 100), prefix.substr(0, 100));
  EXPECT_EQ(a, internName((prefix + ".layers.0").c_str())) << "stable for the same long name";
}
