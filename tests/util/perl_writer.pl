#!/usr/bin/perl
# A writer of the principal as File::Rsync::Mirror::Recentfile 0.4.3 is
# one, for tests/mixed_writers.rs: it takes the lock its way (mkdir
# RFILE.lock; else read RFILE.lock/process, and when that pid is not
# running, warn, sleep 1 s and go ahead, writing its own pid into the
# directory), reads the file, puts one event on top, writes it through the
# shared name RFILE.new and renames it, then unlocks (unlink process,
# rmdir). Written for these tests from the reference's documented
# behaviour; no code of the reference.
#
#   perl_writer.pl RFILE PATH [MARKS]
#
# With MARKS (a directory) it announces its steps there and waits where a
# test wants to order it against rrr: it touches `breaking` and waits for
# `wake` before its sleep, touches `locked` once `process` names it and
# `read` after reading, then waits for `go` before writing.
use strict;
use warnings;
use Time::HiRes ();
use YAML::Syck ();

my ($rfile, $path, $marks) = @ARGV;
die "usage: perl_writer.pl RFILE PATH [MARKS]\n" unless defined $path;

sub mark {
    return unless defined $marks;
    open my $fh, '>', "$marks/$_[0]" or die "cannot touch $marks/$_[0]: $!\n";
    close $fh;
}

sub await {
    return unless defined $marks;
    my $start = time;
    until (-e "$marks/$_[0]") {
        die "waited 60 s for $marks/$_[0]\n" if time - $start > 60;
        Time::HiRes::sleep(0.005);
    }
}

my $lockdir = "$rfile.lock";
my $procfile = "$lockdir/process";
my $start = time;
TAKE: until (mkdir $lockdir) {
    if (open my $fh, '<', $procfile) {
        my $holder = <$fh>;
        $holder = '' unless defined $holder;
        chomp $holder;
        if ($holder =~ /^\d+$/) {
            last TAKE if $holder == $$;
            unless (kill 0, $holder) {
                warn "breaking lock held by process $holder\n";
                mark('breaking');
                await('wake');
                sleep 1;
                last TAKE;
            }
        }
    }
    Time::HiRes::sleep(0.01);
    die "could not take $lockdir\n" if time - $start > 600;
}
open my $ph, '>', $procfile or die "cannot write $procfile: $!\n";
print $ph "$$\n";
close $ph or die "cannot close $procfile: $!\n";
mark('locked');

my $data = YAML::Syck::LoadFile($rfile);
mark('read');
await('go');
my $recent = $data->{recent};
my $epoch = Time::HiRes::time;
$epoch = $recent->[0]{epoch} + 0.001 if @$recent && $epoch < $recent->[0]{epoch} + 0.001;
@$recent = grep { $_->{path} ne $path } @$recent;
unshift @$recent, { epoch => sprintf('%.6f', $epoch), path => $path, type => 'new' };
open my $out, '>', "$rfile.new" or die "cannot write $rfile.new: $!\n";
print $out YAML::Syck::Dump($data);
close $out or die "cannot close $rfile.new: $!\n";
rename "$rfile.new", $rfile or die "cannot rename $rfile.new: $!\n";
unlink $procfile;
rmdir $lockdir;
