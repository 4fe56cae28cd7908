# Sourced by the scripts that build, package and check rtbench for ARM: what each Debian ARM
# architecture is called by Rust, by the GNU cross tools, by qemu-user and by readelf.
#   arm_arch ARCH    sets triple, gnu, qemu and machine for arm64 or armhf; fails otherwise
arm_arch() {
  case "$1" in
    arm64) triple=aarch64-unknown-linux-gnu gnu=aarch64-linux-gnu qemu=qemu-aarch64-static machine=AArch64 ;;
    armhf) triple=armv7-unknown-linux-gnueabihf gnu=arm-linux-gnueabihf qemu=qemu-arm-static machine=ARM ;;
    *) return 1 ;;
  esac
}
