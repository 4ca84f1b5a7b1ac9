# coopr_output prints the stdout and stderr lines of every task result (a
# command's output) as they are, unindented, so that a task's output reads
# like a script's. The default callback shows them only with -v, as JSON.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
    name: coopr_output
    type: notification
    short_description: print the output lines of task results
    description:
      - Prints each task result's stdout_lines to stdout and stderr_lines to stderr.
'''

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'notification'
    CALLBACK_NAME = 'coopr_output'
    CALLBACK_NEEDS_ENABLED = True

    def _lines(self, result):
        r = result._result
        for line in r.get('stdout_lines') or []:
            self._display.display(line)
        for line in r.get('stderr_lines') or []:
            self._display.display(line, stderr=True)

    def v2_runner_on_ok(self, result):
        self._lines(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._lines(result)

    def v2_runner_item_on_ok(self, result):
        self._lines(result)

    def v2_runner_item_on_failed(self, result):
        self._lines(result)
