// GOT patching (got_patch.h). Each loaded object's dynamic relocations name
// the symbols it calls through its GOT; a slot relocated against one of ours
// is overwritten with the hook. With full RELRO the GOT is read-only after
// start-up: its page is made writable for the store and read-only again.
// Function pointers kept in data are relocated the same way (an absolute
// relocation against the symbol): MKL, inside libtorch_cpu, calls the
// allocator only through its own table of them (i_malloc, i_free), so its
// buffers were neither seen allocated nor seen freed while attached.
#include "attach/got_patch.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace gcprof::inject::attach {
namespace {

#if defined(__x86_64__)
constexpr unsigned kJumpSlot = R_X86_64_JUMP_SLOT, kGlobDat = R_X86_64_GLOB_DAT,
                   kAbsolute = R_X86_64_64;
#elif defined(__aarch64__)
constexpr unsigned kJumpSlot = R_AARCH64_JUMP_SLOT, kGlobDat = R_AARCH64_GLOB_DAT,
                   kAbsolute = R_AARCH64_ABS64;
#else
#error "gcprof attach: GOT patching knows x86_64 and aarch64 relocations only"
#endif

struct Slot {
  void** where;
  void* old;
  void* hook;
};

// One patched object. An object unloaded since (dlclose) is forgotten, never
// written to: its slots may be unmapped or belong to another object now.
struct Patched {
  ElfW(Addr) base;
  std::string name;
  std::vector<Slot> slots;
};

// Never destroyed: the attach thread may be patching while the job exits.
std::vector<Patched>& g_objects = *new std::vector<Patched>;
unsigned long long g_adds = 0, g_subs = 0;  // dl_iterate_phdr's counters at the last pass

struct Pass {
  const GotHook* hooks;
  size_t n;
  const void* self;
  bool early = true;  // the round of the hooks that go in `before_others`
  size_t patched = 0;
  bool first = true;
  bool changed = false;  // objects were loaded or unloaded since the last pass
  std::vector<std::pair<ElfW(Addr), std::string>> present;
  std::vector<Patched> fresh;  // the objects this pass patches
};

bool contains(const dl_phdr_info* info, const void* p) {
  auto a = reinterpret_cast<ElfW(Addr)>(p);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && a >= start && a < start + ph.p_memsz) return true;
  }
  return false;
}

bool alreadyPatched(ElfW(Addr) base, const char* name) {
  for (const Patched& p : g_objects)
    if (p.base == base && p.name == name) return true;
  return false;
}

// glibc relocates most d_ptr entries in place; other loaders leave offsets.
ElfW(Addr) dynPtr(ElfW(Addr) v, ElfW(Addr) base) { return v < base ? v + base : v; }

// Read-only after start-up: the part of PT_GNU_RELRO glibc protects (whole pages).
bool inRelro(const dl_phdr_info* info, ElfW(Addr) page) {
  long ps = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_GNU_RELRO) continue;
    ElfW(Addr) start = (info->dlpi_addr + ph.p_vaddr) & ~(ps - 1);
    ElfW(Addr) end = (info->dlpi_addr + ph.p_vaddr + ph.p_memsz) & ~(ps - 1);
    return page >= start && page < end;
  }
  return false;
}

bool store(const dl_phdr_info* info, void** slot, void* value) {
  long ps = sysconf(_SC_PAGESIZE);
  auto page = reinterpret_cast<ElfW(Addr)>(slot) & ~(ps - 1);
  bool ro = inRelro(info, page);
  if (ro && mprotect(reinterpret_cast<void*>(page), ps, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (ro) mprotect(reinterpret_cast<void*>(page), ps, PROT_READ);
  return true;
}

void patchRelocations(const dl_phdr_info* info, const ElfW(Rela)* rel, size_t count,
                      const ElfW(Sym)* symtab, const char* strtab, Pass& pass, Patched& out) {
  for (size_t i = 0; i < count; ++i) {
    unsigned type = ELF64_R_TYPE(rel[i].r_info);
    bool data = type == kAbsolute;
    if (type != kJumpSlot && type != kGlobDat && !(data && rel[i].r_addend == 0)) continue;
    const char* name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
    for (size_t h = 0; h < pass.n; ++h) {
      if (strcmp(name, pass.hooks[h].symbol) != 0) continue;
      if (pass.hooks[h].before_others != pass.early) break;
      void** slot = reinterpret_cast<void**>(info->dlpi_addr + rel[i].r_offset);
      void* old = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      // A pointer in data the job has set to a function of its own since
      // (mkl_set_memory_functions) is the job's choice: left as it is.
      if (data && old != pass.hooks[h].real) break;
      if (old != pass.hooks[h].hook && store(info, slot, pass.hooks[h].hook)) {
        out.slots.push_back({slot, old, pass.hooks[h].hook});
        ++pass.patched;
      }
      break;
    }
  }
}

void patchObject(const dl_phdr_info* info, Pass& pass, Patched& out) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return;
  ElfW(Addr) base = info->dlpi_addr, symtab = 0, strtab = 0, jmprel = 0, rela = 0;
  size_t pltrelsz = 0, relasz = 0;
  long pltrel = DT_RELA;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: symtab = dynPtr(dyn->d_un.d_ptr, base); break;
      case DT_STRTAB: strtab = dynPtr(dyn->d_un.d_ptr, base); break;
      case DT_JMPREL: jmprel = dynPtr(dyn->d_un.d_ptr, base); break;
      case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
      case DT_PLTREL: pltrel = static_cast<long>(dyn->d_un.d_val); break;
      case DT_RELA: rela = dynPtr(dyn->d_un.d_ptr, base); break;
      case DT_RELASZ: relasz = dyn->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab) return;
  auto* syms = reinterpret_cast<const ElfW(Sym)*>(symtab);
  auto* strs = reinterpret_cast<const char*>(strtab);
  if (jmprel && pltrel == DT_RELA)
    patchRelocations(info, reinterpret_cast<const ElfW(Rela)*>(jmprel),
                     pltrelsz / sizeof(ElfW(Rela)), syms, strs, pass, out);
  if (rela)
    patchRelocations(info, reinterpret_cast<const ElfW(Rela)*>(rela), relasz / sizeof(ElfW(Rela)),
                     syms, strs, pass, out);
}

Patched* findFresh(Pass& pass, ElfW(Addr) base, const char* name) {
  for (Patched& p : pass.fresh)
    if (p.base == base && p.name == name) return &p;
  return nullptr;
}

int visit(dl_phdr_info* info, size_t, void* data) {
  Pass& pass = *static_cast<Pass*>(data);
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (!pass.early) {  // the second round: the objects the first one patched
    if (Patched* out = findFresh(pass, info->dlpi_addr, name)) patchObject(info, pass, *out);
    return 0;
  }
  if (pass.first) {
    pass.first = false;
    pass.changed = info->dlpi_adds != g_adds || info->dlpi_subs != g_subs || g_objects.empty();
    g_adds = info->dlpi_adds;
    g_subs = info->dlpi_subs;
  }
  if (!pass.changed) return 1;  // nothing loaded or unloaded: stop the walk
  pass.present.emplace_back(info->dlpi_addr, name);
  // The dynamic loader (its own allocator and locks), the vDSO, ourselves.
  if (strstr(name, "/ld-linux") || strstr(name, "linux-vdso") || strstr(name, "/ld64.so") ||
      contains(info, pass.self))
    return 0;
  if (alreadyPatched(info->dlpi_addr, name)) return 0;
  // Remembered even without slots, so that the next pass skips it.
  pass.fresh.push_back({info->dlpi_addr, name, {}});
  patchObject(info, pass, pass.fresh.back());
  return 0;
}

}  // namespace

size_t patchLoadedObjects(const GotHook* hooks, size_t n, const void* self) {
  Pass pass{hooks, n, self, true, 0, true, false, {}, {}};
  dl_iterate_phdr(visit, &pass);
  if (!pass.changed) return 0;
  pass.early = false;
  dl_iterate_phdr(visit, &pass);
  // Objects unloaded since: forget them (their slots are not ours to write).
  std::vector<Patched> kept;
  for (Patched& p : g_objects) {
    bool loaded = false;
    for (const auto& [base, name] : pass.present) loaded |= base == p.base && name == p.name;
    if (loaded) kept.push_back(std::move(p));
  }
  for (Patched& p : pass.fresh) kept.push_back(std::move(p));
  g_objects.swap(kept);
  return pass.patched;
}

namespace {
int restoreVisit(dl_phdr_info* info, size_t, void*) {
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  for (Patched& p : g_objects) {
    if (p.base != info->dlpi_addr || p.name != name) continue;
    // A slot the job pointed elsewhere meanwhile keeps what the job put there.
    for (auto it = p.slots.rbegin(); it != p.slots.rend(); ++it)
      if (__atomic_load_n(it->where, __ATOMIC_ACQUIRE) == it->hook) store(info, it->where, it->old);
  }
  return 0;
}
}  // namespace

size_t restorePatchedSlots() {
  size_t n = 0;
  for (const Patched& p : g_objects) n += p.slots.size();
  dl_iterate_phdr(restoreVisit, nullptr);
  g_objects.clear();
  g_adds = g_subs = 0;
  return n;
}

}  // namespace gcprof::inject::attach
