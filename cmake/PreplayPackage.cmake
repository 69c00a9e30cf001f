# PreplayPackage.cmake - preplay installed like any Debian tool: what
# `cmake --install` puts where, the man pages and bash completion made at
# build time from the docs and the binary's own help, and the .deb CPack
# builds. Included last by the top-level CMakeLists (after every target
# exists). Paths are fixed, not GNUInstallDirs' multiarch ones: `preplay
# record` finds its tracer library at ../lib/preplay/ beside its bin/, and
# `preplay help` its pages at ../share/; never install them anywhere else.
#
#   bin/preplay
#   lib/preplay/libpreplay_trace.so          (the LD_PRELOAD library)
#   share/man/man1/preplay.1, preplay-COMMAND.1
#   share/bash-completion/completions/preplay
#   share/doc/preplay/                       (README, docs/, formats/ specs)

install(TARGETS preplay RUNTIME DESTINATION bin)
# the BPF CPU clock is embedded in preplay itself: the library is all record needs
install(TARGETS preplay_trace LIBRARY DESTINATION lib/preplay)

# Man pages: one per doc page that names a command (docs/preplay.md is the
# command itself). In the build tree they go to man/man1/ beside the binary,
# where `preplay help` finds them before installing.
file(GLOB preplay_man_docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/preplay.md
  ${CMAKE_SOURCE_DIR}/docs/preplay-*.md)
find_program(PREPLAY_GO_MD2MAN go-md2man)
if(PREPLAY_GO_MD2MAN)
  set(preplay_man_pages)
  foreach(doc ${preplay_man_docs})
    get_filename_component(page ${doc} NAME_WE)
    set(out ${CMAKE_BINARY_DIR}/man/man1/${page}.1)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man/man1
      COMMAND ${CMAKE_SOURCE_DIR}/tools/make-man $<TARGET_FILE:preplay> ${doc} ${out}
              ${PREPLAY_VERSION_STRING}
      DEPENDS ${doc} preplay ${CMAKE_SOURCE_DIR}/tools/make-man
      COMMENT "Making the man page ${page}(1)"
      VERBATIM)
    list(APPEND preplay_man_pages ${out})
  endforeach()
  add_custom_target(preplay_man ALL DEPENDS ${preplay_man_pages})
  install(FILES ${preplay_man_pages} DESTINATION share/man/man1)
else()
  message(STATUS "go-md2man not found: no man pages, `preplay help` shows the docs' text "
                 "(apt-get install go-md2man)")
endif()

# Bash completion, from the built binary's --help (tools/make-completion).
set(preplay_completion ${CMAKE_BINARY_DIR}/completion/preplay)
add_custom_command(OUTPUT ${preplay_completion}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/completion
  COMMAND ${CMAKE_SOURCE_DIR}/tools/make-completion $<TARGET_FILE:preplay> ${preplay_completion}
  DEPENDS preplay ${CMAKE_SOURCE_DIR}/tools/make-completion
  COMMENT "Making the bash completion of preplay"
  VERBATIM)
add_custom_target(preplay_completion ALL DEPENDS ${preplay_completion})
install(FILES ${preplay_completion} DESTINATION share/bash-completion/completions)

# Docs: copied beside the build-tree binary too (doc/), the text `preplay
# help` prints where man is not installed.
file(GLOB preplay_docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
file(GLOB preplay_format_docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/formats/*.md)
foreach(doc ${preplay_docs})
  get_filename_component(name ${doc} NAME)
  configure_file(${doc} ${CMAKE_BINARY_DIR}/doc/${name} COPYONLY)
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${preplay_docs} ${preplay_format_docs}
  DESTINATION share/doc/preplay)
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION share/doc/preplay RENAME copyright)

# The .deb: `cpack -G DEB` in the build directory (after the build). Its
# Depends come from dpkg-shlibdeps on what preplay and the library really
# link (libzstd1, libjansson4, libmariadb3, libbpf1, libunwind8, libc6, and
# whatever else a build links), never from a hand-kept list.
set(PREPLAY_DEB_MAINTAINER "preplay maintainers <preplay@localhost>" CACHE STRING
  "Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME preplay)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${PREPLAY_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "predict an application's performance on another machine by record and replay")
set(CPACK_PACKAGE_DESCRIPTION
  "preplay records what an unmodified application does with its resources (CPU,
disk, network, locks, database queries) with an LD_PRELOAD tracer, rebuilds
which work serves which request, and replays that work on candidate machines
until the response-time distribution is statistically stable (PT4Cloud), so
instance types can be compared before migrating.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# run --db dumps and reloads the database with mariadb-dump/mariadb; run
# --hosts starts remote replayers over ssh
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mariadb-client, man-db")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openssh-client, bash-completion")
set(CPACK_STRIP_FILES ON)
include(CPack)
