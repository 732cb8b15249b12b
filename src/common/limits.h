/* limits.h - bounds shared by layers that do not otherwise know each
 * other (the control protocol checks what the file system will take). */
#ifndef TIERFS_LIMITS_H
#define TIERFS_LIMITS_H

/* An operator's path below the mount root, in bytes. */
#define TFS_PATH_MAX 4096

#endif
