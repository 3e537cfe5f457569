// gcprof-gui --screenshot under Xvfb: the PNG has the requested size, its
// memory area holds the series colours (and the overlays' when a plan and a
// verification run exist), and a foreign file is refused with a message.
#include <gtest/gtest.h>
#include <stb_image.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "palette.h"

namespace {

using gcprof::view::Rgba;
namespace palette = gcprof::view::palette;

const std::string kGui = GCPROF_GUI_BIN;
const std::string kMakeTrace = GCPROF_MAKE_TRACE_BIN;
const std::string kTmp = ::testing::TempDir() + "gcprof-gui-shot-" + std::to_string(getpid());

struct Result {
  int rc = -1;
  std::string out;
};

Result run(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 512> buf;
  while (fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

struct Image {
  int w = 0, h = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> px{nullptr, stbi_image_free};
  Rgba at(int x, int y) const {
    const unsigned char* p = px.get() + (static_cast<size_t>(y) * w + x) * 4;
    return {p[0], p[1], p[2], p[3]};
  }
};

Image load(const std::string& path) {
  Image img;
  int n = 0;
  img.px.reset(stbi_load(path.c_str(), &img.w, &img.h, &n, 4));
  return img;
}

struct Area {
  int x = 0, y = 0, w = 0, h = 0;
};

// "memory area x=.. y=.. w=.. h=.." from the screenshot mode's report line.
Area memoryArea(const std::string& out) {
  Area a;
  size_t at = out.find("memory area ");
  if (at != std::string::npos)
    std::sscanf(out.c_str() + at, "memory area x=%d y=%d w=%d h=%d", &a.x, &a.y, &a.w, &a.h);
  return a;
}

bool near(Rgba a, Rgba b, int tol) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

int countColour(const Image& img, const Area& a, Rgba c, int tol = 0) {
  int n = 0;
  for (int y = a.y; y < a.y + a.h && y < img.h; ++y)
    for (int x = a.x; x < a.x + a.w && x < img.w; ++x) n += near(img.at(x, y), c, tol);
  return n;
}

std::string shoot(const std::string& db, const std::string& png, const std::string& size, Result* r) {
  *r = run("timeout 120 xvfb-run -a " + kGui + " " + db + " --screenshot " + png + " --size " + size);
  return png;
}

TEST(Screenshot, BaselineShowsEverySeries) {
  const std::string db = kTmp + "-base.db";
  ASSERT_EQ(run(kMakeTrace + " " + db).rc, 0);
  Result r;
  Image img = load(shoot(db, kTmp + "-base.png", "1600x900", &r));
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_TRUE(img.px) << "no PNG written";
  EXPECT_EQ(img.w, 1600);
  EXPECT_EQ(img.h, 900);
  Area area = memoryArea(r.out);
  ASSERT_GT(area.w, 800) << r.out;
  ASSERT_GT(area.h, 200) << r.out;
  const int pixels = area.w * area.h;
  // Persistent memory (params, grads, Adam) is the largest series.
  EXPECT_GT(countColour(img, area, palette::kPersistent), pixels / 10);
  // Each of the eight layers' activations shows in its own colour.
  for (int u = 0; u < 8; ++u)
    EXPECT_GT(countColour(img, area, gcprof::view::unitColour(u)), pixels / 1000) << "unit " << u;
  // Not blank: the background alone is one colour.
  EXPECT_LT(countColour(img, area, img.at(area.x + 1, area.y + 1)), pixels * 9 / 10);
  std::remove(db.c_str());
}

TEST(Screenshot, PlanAndVerificationOverlaid) {
  const std::string db = kTmp + "-overlay.db";
  ASSERT_EQ(run(kMakeTrace + " " + db + " --overlay").rc, 0);
  Result r;
  Image img = load(shoot(db, kTmp + "-overlay.png", "1280x720", &r));
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_TRUE(img.px);
  EXPECT_EQ(img.w, 1280);
  EXPECT_EQ(img.h, 720);
  Area area = memoryArea(r.out);
  ASSERT_GT(area.w, 600) << r.out;
  EXPECT_GT(countColour(img, area, palette::kPersistent), area.w * area.h / 10);
  // The budget line spans the area; the measured curve of the verification run.
  EXPECT_GT(countColour(img, area, palette::kBudget, 24), area.w / 2);
  EXPECT_GT(countColour(img, area, palette::kVerified, 24), area.w / 4);
  // The advisor's replay simulator draws the plan's predicted curve.
  EXPECT_GT(countColour(img, area, palette::kPredicted, 24), area.w / 4);
  std::remove(db.c_str());
}

TEST(Screenshot, ForeignFileExitsNonZeroWithAMessage) {
  const std::string db = kTmp + "-foreign.db";
  { std::ofstream(db) << "/dev/null\n"; }
  Result r;
  shoot(db, kTmp + "-foreign.png", "1280x720", &r);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find(db), std::string::npos) << r.out;
  EXPECT_NE(access((kTmp + "-foreign.png").c_str(), F_OK), 0) << "a PNG was written for a foreign file";
  std::remove(db.c_str());
  r = run("timeout 60 xvfb-run -a " + kGui + " /nonexistent/trace.db --screenshot " + kTmp + "-x.png");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("/nonexistent/trace.db"), std::string::npos) << r.out;
}

// A damaged steps table (steps 100 ns apart at 2^60 ns, the allocations near
// 0): the view opens on the steps, where a double's spacing is 256 ns. The
// GUI's work is bounded by the pixels drawn, so the screenshot is written
// under a 3 GB address-space limit, on the opening view and fitted to a step
// (it grew without bound, 10 GB in 30 s, and crashed under the limit).
TEST(Screenshot, DamagedStepTimesDrawWithinAMemoryLimit) {
  const std::string db = kTmp + "-damaged.db";
  ASSERT_EQ(run(kMakeTrace + " " + db + " --damaged-steps").rc, 0);
  for (const std::string& extra : {std::string(), std::string(" --step 1")}) {
    const std::string png = kTmp + "-damaged.png";
    std::remove(png.c_str());
    Result r = run("prlimit --as=3000000000 timeout 120 xvfb-run -a " + kGui + " " + db + " --screenshot " +
                   png + " --size 1600x900" + extra);
    ASSERT_EQ(r.rc, 0) << extra << ": " << r.out;
    Image img = load(png);
    ASSERT_TRUE(img.px) << extra << ": no PNG written";
    EXPECT_EQ(img.w, 1600);
    EXPECT_EQ(img.h, 900);
    std::remove(png.c_str());
  }
  std::remove(db.c_str());
}

// --plan, --step and --frames that cannot be shown are refused before a
// window opens (no display is needed to see it), naming what the file has.
TEST(Screenshot, ChoicesTheFileLacksAreRefusedNamingWhatItHas) {
  const std::string db = kTmp + "-choices.db";
  ASSERT_EQ(run(kMakeTrace + " " + db + " --overlay").rc, 0);
  const std::string png = kTmp + "-choices.png";
  struct Case {
    std::string args, says;
  };
  for (const Case& c : {Case{"--plan 99", "has no plan 99 for run 1; it has plans 1"},
                        Case{"--step -5", "--step -5: step indexes are 0 or more"},
                        Case{"--step 7", "has no step 7; it has steps 0-2"},
                        Case{"--frames -1", "--frames -1: give 1 to 1000 frames"},
                        Case{"--plan -3", "--plan -3: plan ids are 1 or more"}}) {
    for (const std::string& mode : {" --screenshot " + png, std::string()}) {
      Result r = run("env -u DISPLAY timeout 60 " + kGui + " " + db + " " + c.args + mode);
      EXPECT_EQ(r.rc, 2) << c.args << mode << ": " << r.out;
      EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << mode << ": " << r.out;
      EXPECT_NE(access(png.c_str(), F_OK), 0) << c.args << ": a PNG was written";
    }
  }
  std::remove(db.c_str());
}

// On a real recording when this build has the recorder and the C++ sample.
TEST(Screenshot, RecordedSampleTrace) {
  const std::string gcprof = GCPROF_BIN_DIR "/gcprof", sample = GCPROF_BIN_DIR "/gpt_train";
  if (access(gcprof.c_str(), X_OK) != 0 || access(sample.c_str(), X_OK) != 0)
    GTEST_SKIP() << "no gcprof or gpt_train in " GCPROF_BIN_DIR;
  const std::string db = kTmp + "-recorded.db";
  std::remove(db.c_str());
  Result rec = run("timeout 600 " + gcprof + " record -o " + db + " -- " + sample + " --layers 8 --steps 3");
  ASSERT_EQ(rec.rc, 0) << rec.out;
  Result r;
  Image img = load(shoot(db, kTmp + "-recorded.png", "1600x900", &r));
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_TRUE(img.px);
  EXPECT_EQ(img.w, 1600);
  Area area = memoryArea(r.out);
  ASSERT_GT(area.w, 800) << r.out;
  EXPECT_GT(countColour(img, area, palette::kPersistent), area.w * area.h / 50);
  int unit_pixels = 0;
  for (int u = 0; u < 8; ++u) unit_pixels += countColour(img, area, gcprof::view::unitColour(u));
  EXPECT_GT(unit_pixels, area.w * area.h / 100) << "no activations coloured by unit";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((db + ext).c_str());
}

}  // namespace
