// Running python code inside an attached process, from a thread of ours:
// the interpreter's C API is found with dlsym (the injector links no python),
// and every call holds the GIL (PyGILState_Ensure), never from a context
// where a stopped thread might hold it.
#pragma once

#include <string>

namespace gcprof::inject::attach {

// The process runs an initialized CPython.
bool pythonPresent();

// Evaluates a python expression under the GIL; its int value, or `failed`
// when it raised (the traceback goes to the job's stderr, once).
long evalPython(const std::string& expression, long failed);

// `text` as a python string literal.
std::string pythonLiteral(const std::string& text);

}  // namespace gcprof::inject::attach
