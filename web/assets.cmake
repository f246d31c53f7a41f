# The web UI's files, embedded in kiln_server at build time (src/server/static_assets.cpp
# serves them): the pages in web/ and the JavaScript libraries of Debian's libjs-marked,
# libjs-highlight.js and libjs-katex (setup.sh installs them). No network, no npm.
find_program(KILN_GZIP gzip REQUIRED)
set(KILN_JS_DIR /usr/share/javascript CACHE PATH "Debian's JavaScript libraries (libjs-marked, libjs-highlight.js, libjs-katex)")
set(_web ${PROJECT_SOURCE_DIR}/web)

# url path | source file | content type (text/* types are served as UTF-8)
set(KILN_WEB_ASSETS
  "/|${_web}/index.html|text/html"
  "/explore|${_web}/explore.html|text/html"
  "/web/style.css|${_web}/style.css|text/css"
  "/web/chat.js|${_web}/chat.js|text/javascript"
  "/web/markdown.js|${_web}/markdown.js|text/javascript"
  "/web/explore.js|${_web}/explore.js|text/javascript"
  "/web/gguf.js|${_web}/gguf.js|text/javascript"
  "/web/common.js|${_web}/common.js|text/javascript"
  "/favicon.svg|${_web}/favicon.svg|image/svg+xml"
  "/favicon.ico|${_web}/favicon.svg|image/svg+xml"
  "/vendor/marked.min.js|${KILN_JS_DIR}/marked/marked.umd.min.js|text/javascript"
  "/vendor/highlight.min.js|${KILN_JS_DIR}/highlight.js/highlight.min.js|text/javascript"
  "/vendor/hljs.css|${KILN_JS_DIR}/highlight.js/styles/github.css|text/css"
  "/vendor/katex/katex.min.js|${KILN_JS_DIR}/katex/katex.min.js|text/javascript"
  "/vendor/katex/katex.min.css|${KILN_JS_DIR}/katex/katex.min.css|text/css")
# KaTeX's fonts: only the woff2 files (every browser that runs the page takes those first).
file(GLOB _katex_fonts ${KILN_JS_DIR}/katex/fonts/*.woff2)
if(NOT _katex_fonts)
  message(FATAL_ERROR "no KaTeX fonts in ${KILN_JS_DIR}/katex/fonts: install libjs-katex (setup.sh does)")
endif()
foreach(_f ${_katex_fonts})
  get_filename_component(_n ${_f} NAME)
  list(APPEND KILN_WEB_ASSETS "/vendor/katex/fonts/${_n}|${_f}|font/woff2")
endforeach()

set(_deps)
foreach(_a ${KILN_WEB_ASSETS})
  string(REPLACE "|" ";" _parts "${_a}")
  list(GET _parts 1 _src)
  if(NOT EXISTS ${_src})
    message(FATAL_ERROR "web UI file missing: ${_src} (install libjs-marked, libjs-highlight.js and libjs-katex: setup.sh does)")
  endif()
  list(APPEND _deps ${_src})
endforeach()
list(REMOVE_DUPLICATES _deps)

set(KILN_WEB_CPP ${PROJECT_BINARY_DIR}/generated/web_assets.cpp)
string(REPLACE ";" "\n" _list_text "${KILN_WEB_ASSETS}")
file(WRITE ${PROJECT_BINARY_DIR}/generated/web_assets.list.in "${_list_text}\n")
configure_file(${PROJECT_BINARY_DIR}/generated/web_assets.list.in ${PROJECT_BINARY_DIR}/generated/web_assets.list COPYONLY)
add_custom_command(
  OUTPUT ${KILN_WEB_CPP}
  COMMAND ${CMAKE_COMMAND} -DLIST=${PROJECT_BINARY_DIR}/generated/web_assets.list -DOUT=${KILN_WEB_CPP}
          -DGZIP=${KILN_GZIP} -P ${PROJECT_SOURCE_DIR}/cmake/embed_web.cmake
  DEPENDS ${_deps} ${PROJECT_SOURCE_DIR}/cmake/embed_web.cmake ${PROJECT_BINARY_DIR}/generated/web_assets.list
  COMMENT "Embedding the web UI (${KILN_WEB_CPP})"
  VERBATIM)
