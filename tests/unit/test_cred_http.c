/* test_cred_http.c - the credential sources' HTTP call: loopback rules,
 * and a dead endpoint is a connect failure with a message that names it
 * (loopback only: a bound port that does not listen). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "s3/cred_http.h"

Test(cred_http, loopback_hosts)
{
	cr_assert(cred_http_url_is_loopback("http://127.0.0.1:8080/x"));
	cr_assert(cred_http_url_is_loopback("http://127.1.2.3/"));
	cr_assert(cred_http_url_is_loopback("http://localhost/token"));
	cr_assert(cred_http_url_is_loopback("http://[::1]:9/x"));
	cr_assert_not(cred_http_url_is_loopback("http://127.0.0.1.evil.com/x"));
	cr_assert_not(cred_http_url_is_loopback("http://10.0.0.1/"));
	cr_assert_not(cred_http_url_is_loopback("http://localhost.example/"));
	cr_assert_not(cred_http_url_is_loopback("http://[::2]/"));
	cr_assert_not(cred_http_url_is_loopback("no-scheme"));
}

Test(cred_http, dead_endpoint_is_a_connect_failure)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char url[64];
	struct cred_http_resp resp;
	struct tfs_errinfo ei;

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/token?secret=x", ntohs(sa.sin_port));
	{
		struct cred_http_req req = { .method = "GET", .url = url, .timeout_ms = 2000 };

		tfs_errinfo_clear(&ei);
		cr_assert_eq(cred_http_do(&req, &resp, &ei), TFS_E_CONNECT);
	}
	cr_assert(strstr(ei.message, "/token"), "%s", ei.message);
	cr_assert_null(strstr(ei.message, "secret"), "no query in messages: %s", ei.message);
	cr_assert_null(resp.body);
	close(fd);
}
